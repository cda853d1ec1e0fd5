"""MI355X (gfx950) figures the model uses, each with its source. Units: clocks of the engine
clock (clk; 2.4 GHz unless a clock sweep sets another, set_clock), bytes, seconds."""

# ---------------------------------------------------------------- published figures
CLOCK_HZ = 2.4e9        # peak engine clock, AMD MI355X data sheet (set_clock changes it)
PEAK_CLOCK_HZ = 2.4e9
# Sustained clocks under load are lower than the peak and not published; the model is also
# run at these (issue and pipe times grow in seconds, HBM latency and bandwidth do not).
CLOCK_SWEEP_HZ = (1.8e9, 2.1e9, 2.4e9)
CUS = 256               # ROCm "GPU specifications" table: MI355X 256 CUs (32 per XCD)
SIMDS_PER_CU = 4
MAX_WAVES_PER_SIMD = 8  # docs/gfx950-isa.md §8 (clang-22's occupancy rule)
VGPRS_PER_SIMD_LANE = 512  # unified ArchVGPR + AGPR file, docs/gfx950-isa.md §8
LDS_BYTES_PER_CU = 160 * 1024  # ROCm GPU specifications; docs/gfx950-isa.md §8
HBM_PEAK_BYTES_S = 8.0e12      # AMD MI355X data sheet
# Public streaming benchmarks, as quoted by issue 19 (not re-measured here: no AMD GPU).
HBM_MEASURED_BYTES_S = (6.3e12, 6.9e12)

# ---------------------------------------------------------------- issue and pipe rates
# One wave issues at most one instruction per 4 clk (a SIMD is offered an issue slot every
# 4 clk; LLVM's SISchedule.td states its latencies in these units: "1 / (operations / cycle)
# / 4"). A wave64 VALU instruction keeps the 16-lane SIMD busy 4 clk; packed FP32 does two
# operations per lane in those 4 clk (the 157.3 TF FP32 vector peak = 256 CU x 4 SIMD x 16
# lanes x 2 (FMA) x 2 (packed) x 2.4 GHz); F32 transcendentals and 64-bit integer
# multiply-adds are quarter rate (SISchedule.td: WriteTrans32 "these are quarter rate",
# WriteIntMul).
ISSUE_CLK = 4
VALU_CLK = {"full": 4, "packed": 4, "cross": 4, "trans": 16, "quarter": 16}

# MFMA: clocks the SIMD's matrix core is busy, from the CDNA4 ISA guide's table (spec
# gfx950-isa.md §1.6, §2) and consistent with AMD's peaks: 16x16x128 FP4 x FP4 in 16 clk =
# 4096 FLOP/clk/SIMD (10.1 PF dense MXFP4 at 2.4 GHz x 1024 SIMDs), 32 clk when an operand
# is FP8 (5.0 PF FP8; 8192 FLOP/clk/CU, ISSCC 2026), bf16 16x16x32 in 16 clk (2.5 PF), the
# older bf16 16x16x16 also 16 clk (half the bf16 peak).
def mfma_clk(shape):
    dims, _, kind = shape.partition(" ")
    if dims == "16x16x128":
        operands = kind.replace("scaled ", "").split("*")
        small = {"fp4", "fp6", "bf6"}
        return 16 if all(o in small for o in operands) else 32
    if dims in ("16x16x16", "16x16x32") and "bf16" in kind:
        return 16
    if dims in ("16x16x16", "16x16x32") and "f16" in kind:
        return 16
    raise ValueError(f"no MFMA rate for {shape}")


# An MFMA also takes the SIMD's VALU issue for a few clocks: AMD's matrix instruction
# calculator (ROCm/amd_matrix_instruction_calculator, matrix_calculator.py @2ef9189) gives
# every CDNA3 XDL instruction a `coexec_delay` of 4 cycles, "the number of cycles after
# issuing a matrix op before any co-executing VALU instructions can start issuing" (for the
# 16-cycle 16x16x16 bf16: "VALU co-execution cycles possible: 12" of 16). No CDNA4 table is
# published; the CDNA3 value is used for every MFMA.
MFMA_VALU_CLK = 4


def mfma_flops(shape):
    m, n, k = (int(x) for x in shape.split(" ")[0].split("x"))
    return 2 * m * n * k


# LDS: 128 bytes per clk per CU (CDNA3's rate; CDNA4 is described as having more LDS
# bandwidth (chipsandcheese, "AMD's CDNA 4 architecture announcement"), without a figure:
# the lower value is used). Vector memory (texture addresser / L1): 64 bytes per clk per CU
# (the GCN/CDNA L1 rate; an assumption for CDNA4).
LDS_BYTES_PER_CLK = 128
VMEM_BYTES_PER_CLK = 64

# ---------------------------------------------------------------- assumptions
# Loaded HBM round-trip latency seen by a wave (issue of a load to its data in VGPRs). No
# gfx950 figure was found in public sources; CDNA3 pointer-chasing studies (e.g. Tee et al.,
# "The MALL is Open", SC25 workshops) put HBM in the high hundreds of ns unloaded; under
# streaming load it is longer. The model reports results for the nominal value and lists
# the bytes in flight each kernel would need.
HBM_LATENCY_S = 1.0e-6
HBM_LATENCY_RANGE_S = (0.7e-6, 2.0e-6)


# LDS banks (bank-conflict degrees come from the emulator, perf/gfx950_lds_banks.cpp): 64
# banks of 4 bytes on gfx950 (spec gfx950-isa.md §8 from the CDNA4 ISA guide; CK's
# ck_tile get_n_lds_banks(gfx950_t) returns 64, ROCm/composable_kernel
# include/ck_tile/core/arch/arch.hpp; 32 on gfx9 before it).
LDS_BANKS = 64


def set_clock(hz):
    global CLOCK_HZ
    CLOCK_HZ = hz


def clk(seconds):
    return seconds * CLOCK_HZ


def seconds(clocks):
    return clocks / CLOCK_HZ


def occupancy(vgprs, lds_bytes, waves_per_workgroup, sgprs=0):
    """Waves per CU that the registers and the LDS allow (docs/gfx950-isa.md §8)."""
    granule = 8
    v = max(granule, -(-vgprs // granule) * granule)
    per_simd = min(MAX_WAVES_PER_SIMD, VGPRS_PER_SIMD_LANE // v)
    if sgprs > 100:
        per_simd = min(per_simd, 7)
    by_regs_wg = (per_simd * SIMDS_PER_CU) // waves_per_workgroup
    by_lds_wg = LDS_BYTES_PER_CU // lds_bytes if lds_bytes else by_regs_wg
    workgroups = min(by_regs_wg, by_lds_wg)
    return {"waves_per_simd_regs": per_simd, "workgroups_per_cu": workgroups,
            "waves_per_cu": workgroups * waves_per_workgroup,
            "limit": "VGPRs" if by_regs_wg <= by_lds_wg else "LDS"}
