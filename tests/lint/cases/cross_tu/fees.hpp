#pragma once

double compute_fee(double amount);
double exchange_rate();
