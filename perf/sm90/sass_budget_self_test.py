"""The self-test of sass_budget.py: made-up kernels in nvdisasm's format whose counts are
known by hand, run through the counter and its checks (ctest sm90_budget.self_test)."""
from sass_budget import check, count_kernel, report
from sass_cfg import parse_listing

# ---------------------------------------------------------------- self-test
# A made-up kernel in nvdisasm's format: a tile loop with 4 conversion ops feeding a GMMA, a
# CTA vote choosing between two variants, an mbarrier wait with its retry, a divergent fallback,
# a one-warp copy issue with a waterfall loop, and an epilogue.
SELF_TEST_LISTING = """
//--------------------- .text._Z4testILi6ELi1EEv --------------------------
        /*0000*/                   S2R R0, SR_TID.X ;
        /*0010*/                   MOV R1, RZ ;
.L_x_0:
        /*0020*/                   SYNCS.PHASECHK.TRANS64.TRYWAIT P2, [R9+URZ+0x100], R8 ;
        /*0030*/              @!P2 BRA `(.L_x_9) ;
.L_x_10:
        /*0040*/                   LDSM.16.M88.4 R20, [R10] ;
        /*0050*/                   LOP3.LUT R24, R20, 0x80808080, RZ, 0xc0, !PT ;
        /*0060*/                   SHF.R.U32.HI R25, RZ, 0x2, R21 ;
        /*0070*/                   IMAD.SHL.U32 R26, R22, 0x10, RZ ;
        /*0080*/                   LOP3.LUT R27, R23, 0x1c1c1c1c, RZ, 0xc0, !PT ;
        /*0090*/                   IADD3 R11, R10, 0x20, RZ ;
        /*00a0*/                   WARPGROUP.ARRIVE ;
        /*00b0*/                   QGMMA.64x8x32.F32.E4M3.E4M3 R40, R24, gdesc[UR4], RZ, !UPT, gsb0 ;
        /*00c0*/                   WARPGROUP.DEPBAR.LE gsb0, 0x0 ;
        /*00d0*/                   FMNMX R50, R40, R41, !PT ;
        /*00e0*/                   BRA.DIV UR4, `(.L_x_8) ;
        /*00f0*/                   SHFL.BFLY PT, R51, R50, 0x4, 0x1f ;
.L_x_11:
        /*0100*/                   FSETP.NEU.AND P3, PT, R51, 1, PT ;
        /*0110*/                   BAR.RED.OR.DEFER_BLOCKING 0x0, P3 ;
        /*0120*/                   B2R.RESULT RZ, P4 ;
        /*0130*/               @P4 BRA `(.L_x_2) ;
        /*0140*/                   FMUL R40, R40, R51 ;
        /*0150*/                   FMUL R41, R41, R51 ;
        /*0160*/                   BRA `(.L_x_3) ;
.L_x_2:
        /*0170*/                   FMUL R40, R40, R51 ;
        /*0180*/                   FMUL R41, R41, R51 ;
        /*0190*/                   FMUL R42, R42, R51 ;
        /*0198*/                   FMUL R43, R43, R51 ;
.L_x_3:
        /*01a0*/                   ISETP.NE.AND P5, PT, R0, RZ, PT ;
        /*01b0*/                   BSSY B1, `(.L_x_4) ;
        /*01c0*/               @P5 BRA `(.L_x_4) ;
        /*01d0*/                   SYNCS.ARRIVE.TRANS64 RZ, [R9+URZ+0x100], R12 ;
.L_x_5:
        /*01e0*/                   R2UR UR8, R13 ;
        /*01f0*/                   R2UR UR9, R14 ;
        /*0200*/                   UBLKCP.S.G [UR8], [UR9], UR10 ;
        /*0210*/              @P6 BRA.U.ANY `(.L_x_5) ;
        /*0220*/                   LDG.E R15, desc[UR6][R16.64] ;
        /*0230*/                   IADD3 R16, R16, 0x4, RZ ;
        /*0240*/                   STS [R17], R15 ;
        /*0250*/                   MOV R18, R15 ;
.L_x_4:
        /*0260*/                   BSYNC B1 ;
        /*0270*/                   IADD3 R1, R1, 0x1, RZ ;
        /*0280*/                   ISETP.NE.AND P0, PT, R1, 0x10, PT ;
        /*0290*/              @P0 BRA `(.L_x_0) ;
        /*02a0*/                   STG.E desc[UR6][R30.64], R40 ;
        /*02b0*/                   EXIT ;
.L_x_9:
        /*02c0*/                   SYNCS.PHASECHK.TRANS64.TRYWAIT P2, [R9+URZ+0x100], R8 ;
        /*02d0*/              @!P2 BRA `(.L_x_9) ;
        /*02e0*/                   BRA `(.L_x_10) ;
.L_x_8:
        /*02f0*/                   WARPSYNC.ALL ;
        /*0300*/                   SHFL.BFLY PT, R51, R50, 0x4, 0x1f ;
        /*0310*/                   BRA `(.L_x_11) ;
"""
# Per warp and tile: the consumer path is 0x20-0x30 (2), 0x40-0xe0 (11), 0xf0 (1), 0x100-0x130
# (4), the vote's "no thread" side 0x140-0x160 (3; @P4, "some thread", jumps to the 4-multiply
# variant), 0x1a0-0x1c0 (3), 0x260-0x290 (4) = 28 by 4 warps; the copy region 0x1d0-0x250 = 9 by
# one warp (the waterfall loop once); the retry and the fallback not at all. Conversion: the 4
# integer ops between the LDSM and the QGMMA's A registers R24..R27.
SELF_TEST_EXPECT = {"per_token": (28 * 4 + 9) / 64, "conversion": 4 * 4 / 64, "MMA": 4 * 4 / 64,
                    "consumer": 28, "copy": 9}

# The second design's shape: warps >= 16 consume, a producer loop of its own issues the copies
# (waiting on "empty" barriers), a ballot skips the rescale. Per tile: consumer 0xb0-0xc0 (2),
# 0xd0-0x160 (10), 0x190-0x1c0 (4; the FMULs after the vote are skipped) = 16 by 4 warps;
# producer 0x30-0x40 (2), 0x50-0x90 (5) = 7 once. Conversion: LOP3 x 2, MOV x 2 into R24..R27.
SELF_TEST_PRODUCER_LISTING = """
//--------------------- .text._Z8producerILi6ELi1EEv --------------------------
        /*0000*/                   S2R R0, SR_TID.X ;
        /*0010*/                   ISETP.GE.U32.AND P0, PT, R0, 0x20, PT ;
        /*0020*/               @P0 BRA `(.L_x_20) ;
.L_x_21:
        /*0030*/                   SYNCS.PHASECHK.TRANS64.TRYWAIT P1, [UR4+0x10], R2 ;
        /*0040*/              @!P1 BRA `(.L_x_29) ;
.L_x_30:
        /*0050*/                   SYNCS.ARRIVE.TRANS64 RZ, [UR4+0x20], R3 ;
        /*0060*/                   UBLKCP.S.G [UR8], [UR10], UR12 ;
        /*0070*/                   IADD3 R4, R4, 0x1, RZ ;
        /*0080*/                   ISETP.NE.AND P2, PT, R4, R5, PT ;
        /*0090*/               @P2 BRA `(.L_x_21) ;
        /*00a0*/                   EXIT ;
.L_x_20:
        /*00b0*/                   SYNCS.PHASECHK.TRANS64.TRYWAIT P1, [UR4+0x20], R2 ;
        /*00c0*/              @!P1 BRA `(.L_x_31) ;
.L_x_32:
        /*00d0*/                   LDSM.16.M88.4 R20, [R10] ;
        /*00e0*/                   LOP3.LUT R24, R20, 0x80808080, RZ, 0xc0, !PT ;
        /*00f0*/                   LOP3.LUT R25, R21, 0x1c1c1c1c, RZ, 0xc0, !PT ;
        /*0100*/                   MOV R26, R22 ;
        /*0110*/                   MOV R27, R23 ;
        /*0120*/                   QGMMA.64x8x32.F32.E4M3.E4M3 R40, R24, gdesc[UR4], RZ, !UPT, gsb0 ;
        /*0130*/                   WARPGROUP.DEPBAR.LE gsb0, 0x0 ;
        /*0140*/                   FSETP.GT.AND P3, PT, R40, R50, PT ;
        /*0150*/                   VOTE.ANY R6, P4, P3 ;
        /*0160*/              @!P4 BRA `(.L_x_23) ;
        /*0170*/                   FMUL R41, R41, R51 ;
        /*0180*/                   FMUL R42, R42, R51 ;
.L_x_23:
        /*0190*/                   SYNCS.ARRIVE.TRANS64.A1T0 RZ, [UR4+0x10], RZ ;
        /*01a0*/                   IADD3 R7, R7, 0x1, RZ ;
        /*01b0*/                   ISETP.NE.AND P5, PT, R7, R8, PT ;
        /*01c0*/               @P5 BRA `(.L_x_20) ;
        /*01d0*/                   EXIT ;
.L_x_29:
        /*01e0*/                   SYNCS.PHASECHK.TRANS64.TRYWAIT P1, [UR4+0x10], R2 ;
        /*01f0*/              @!P1 BRA `(.L_x_29) ;
        /*0200*/                   BRA `(.L_x_30) ;
.L_x_31:
        /*0210*/                   SYNCS.PHASECHK.TRANS64.TRYWAIT P1, [UR4+0x20], R2 ;
        /*0220*/              @!P1 BRA `(.L_x_31) ;
        /*0230*/                   BRA `(.L_x_32) ;
"""
SELF_TEST_PRODUCER_EXPECT = {"per_token": (16 * 4 + 7) / 64, "conversion": 4 * 4 / 64, "MMA": 3 * 4 / 64,
                             "consumer": 16, "copy": 7}


def self_test():
    failures = []
    cases = [("_Z4testILi6ELi1EEv", SELF_TEST_LISTING, SELF_TEST_EXPECT, "copy issue (one warp)"),
             ("_Z8producerILi6ELi1EEv", SELF_TEST_PRODUCER_LISTING, SELF_TEST_PRODUCER_EXPECT,
              "producer loop (one warp per tile)")]
    for name, listing, expect, copy_part in cases:
        c = count_kernel(name, parse_listing(listing)[name])
        print(report(c))
        got = {"per_token": c.per_token, "conversion": c.by_category["conversion"], "MMA": c.by_category["MMA"],
               "consumer": c.parts.get("consumer path (every warp)", (0, 0))[0], "copy": c.parts.get(copy_part, (0, 0))[0]}
        for k, v in expect.items():
            if abs(got[k] - v) > 1e-9:
                failures.append(f"{name}: {k}: expected {v}, counted {got[k]}")
        # the checks themselves: a budget below the count fails, one above passes, a recorded
        # count outside the tolerance fails
        if check(c, budget=c.per_token - 0.01, quiet=True) == 0:
            failures.append(f"{name}: a budget below the count did not fail")
        if check(c, budget=c.per_token + 0.01, quiet=True) != 0:
            failures.append(f"{name}: a budget above the count failed")
        if check(c, budget=c.per_token + 0.01, over_budget=True, quiet=True) == 0:
            failures.append(f"{name}: --expect-over-budget passed a kernel within the budget")
        if check(c, expect=c.per_token + 0.5, tolerance=0.25, quiet=True) == 0:
            failures.append(f"{name}: a recorded count 0.5 away (tolerance 0.25) did not fail")
    if failures:
        print("sass_budget self-test FAILED:\n  " + "\n  ".join(failures))
        return 1
    print("sass_budget self-test passed")
    return 0
