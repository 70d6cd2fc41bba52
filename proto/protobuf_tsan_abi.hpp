// Included first in every C++ file of a ThreadSanitizer build (-include, set
// in the top meson.build); nowhere else.
//
// protobuf 3.21's map_field.h gives MapFieldBase two extra members
// (seq1_, seq2_) when __SANITIZE_THREAD__ is defined, as g++ does under
// -fsanitize=thread. Debian's libprotobuf.so is built without them, so the
// MapFields our compiler lays out and the library's MapFieldBase code
// disagree on where repeated_field_, mutex_ and state_ live. The generated
// map accessors happen to survive that, but reflection over a map field
// (FieldSize, MutableRepeatedMessage: what validate_request does to every
// Payload's metadata) runs the library's code on our layout and crashes.
// Reading map_field.h here with the macro hidden gives our code the
// library's layout; its include guard keeps that for every later include.
// The hidden members only helped TSan spot races inside protobuf, which is
// not built with TSan here anyway.
#pragma once

#pragma push_macro("__SANITIZE_THREAD__")
#undef __SANITIZE_THREAD__
#include <google/protobuf/map_field.h>
#pragma pop_macro("__SANITIZE_THREAD__")
