#include "fees.hpp"

double compute_fee(double amount) { return amount * 0.01 * exchange_rate(); }
