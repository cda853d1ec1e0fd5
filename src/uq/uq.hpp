// uq: decode kernels for 4-bit KV caches. Umbrella header.
#pragma once

#include "uq/backend.hpp"
#include "uq/decode.hpp"
#include "uq/error.hpp"
#include "uq/partitions.hpp"
#include "uq/rotate_query.hpp"
#include "uq/types.hpp"
#include "uq/ultraquant.hpp"
#include "uq/wht.hpp"
#include "uq/write_kv.hpp"
