// Catch2 v2 (Debian 12) and v3 spell their single include differently; tests include this.
#pragma once
#if __has_include(<catch2/catch_all.hpp>)
#include <catch2/catch_all.hpp>
#else
#include <catch2/catch.hpp>
#endif
