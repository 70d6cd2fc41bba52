// REPRISE_EXPORT marks what the shared libraries (libreprise,
// libreprise-embedded, libreprise-testing) export: they are compiled with
// -fvisibility=hidden, so a class, function or variable the public headers
// promise (or that their templates and inline code call) must carry it.
// In a static build it changes nothing.
#pragma once

#define REPRISE_EXPORT __attribute__((visibility("default")))
