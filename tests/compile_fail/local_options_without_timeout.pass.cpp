#include "prelude.hpp"
reprise::LocalActivityOptions options = reprise::LocalActivityOptions::start_to_close(5s);
