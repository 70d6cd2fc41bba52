// One history event as one readable line, for `reprise workflow show`:
//   5  2026-12-02T23:40:01.120Z  ActivityTaskScheduled  'charge' id=1 input=[{"id":"o7","cents":1250}]
#pragma once

#include <string>

#include "reprise/v1/history.pb.h"

namespace reprise::cli {

std::string event_line(const v1::HistoryEvent& e);

}  // namespace reprise::cli
