#include "harness.hpp"
TEST_CASE("placeholder"){}
