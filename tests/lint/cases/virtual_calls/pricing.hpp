// A hierarchy in a header: any unit that includes it may add an override.
#pragma once

struct Pricing {
  virtual ~Pricing() = default;
  virtual long price(long cents) const = 0;
};

// Its only override reads the clock; it is defined in surge.cpp.
struct SurgePricing : Pricing {
  long price(long cents) const override;
};

// Defined in every unit that includes it, and deterministic.
struct FlatPricing : Pricing {
  long price(long cents) const override { return cents; }
};

const Pricing& default_pricing();

// Two implementations that agree, neither reads the clock.
struct Rounding {
  virtual ~Rounding() = default;
  virtual long round(long cents) const { return cents - cents % 5; }
};
struct BankersRounding : Rounding {
  long round(long cents) const override { return cents - cents % 10; }
};
