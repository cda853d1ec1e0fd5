// uq: decode kernels for 4-bit KV caches. Umbrella header.
#pragma once

#include "uq/backend.hpp"
#include "uq/decode.hpp"
#include "uq/error.hpp"
#include "uq/gather_kv.hpp"
#include "uq/nvfp4.hpp"
#include "uq/partitions.hpp"
#include "uq/rotate_query.hpp"
#include "uq/score.hpp"
#include "uq/select_blocks.hpp"
#include "uq/types.hpp"
#include "uq/ultraquant.hpp"
#include "uq/wht.hpp"
#include "uq/write_index_keys.hpp"
#include "uq/write_kv.hpp"
