#include "prelude.hpp"
reprise::ActivityOptions options = reprise::ActivityOptions::start_to_close(30s);
