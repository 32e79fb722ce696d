#!/usr/bin/env python3
"""ISA gates for the HIP build: reads the AMDGPU code objects inside the built library and checks,
per kernel, what the source cannot prove (docs/portability.md explains each gate):

  mfma     gfx950: every paged_logits_kernel instantiated with gfx950_policy issues
           v_mfma_scale_f32_16x16x128_f8f6f4 with E2M1 on both sides (cbsz:4 blgp:4) inside a
           loop (a backward branch spans it), and no scaled MFMA with other formats; its head
           sum in that loop is packed (v_pk_fma_f32, two heads an instruction) after a relu of
           one instruction (v_maximum3_f32), with no compare-and-select relu left.
  stream   gfx950: that scoring loop loads its keys itself (global_load_dwordx4, no LDS tile
           read) and never waits for every load in flight (no s_waitcnt vmcnt(0)): the next
           steps' keys stay in flight while a step is scored.
  scratch  every kernel of every architecture: .private_segment_fixed_size 0, no VGPR/SGPR
           spills, no dynamic stack.
  occupancy gfx950: arch + acc VGPRs and LDS (static + the launcher's dynamic bytes) leave at
           least 2 waves per SIMD (512 VGPRs a lane per SIMD, granule 8; 160 KiB LDS per CU,
           4 SIMDs). Kernels gfx950 never runs (the generic logits tile) are reported, not gated.

Usage (inside the ROCm chroot, tools/rocm-chroot.sh): tools/isa-gates.py [BUILD_DIR]
(default build/rocm). Prints one table row per kernel and exits 1 on any violation.
Python 3 standard library only; LLVM tools from /usr/lib/llvm-22/bin or $MXI_LLVM_BIN.
"""
import math
import os
import re
import shutil
import subprocess
import sys
import tempfile

LLVM = os.environ.get("MXI_LLVM_BIN", "/usr/lib/llvm-22/bin")
ARCHS = ("gfx950", "gfx942")
GATED_OCCUPANCY_ARCH = "gfx950"

# gfx950 (CDNA4) per-SIMD and per-CU budgets.
VGPRS_PER_SIMD_LANE = 512  # unified arch + acc file, wave64
VGPR_GRANULE = 8
MAX_WAVES_PER_SIMD = 8
LDS_PER_CU = 160 * 1024
SIMDS_PER_CU = 4
MIN_WAVES_PER_SIMD = 2

# Dynamic LDS of the kernels launched with extern __shared__ memory: it is invisible in the code
# object, so the launchers' formulas are mirrored here (keep in step with the headers; the values
# are device/tuning.hpp's logits_config::stages and logits_plan_config::max_chunk).
LOGITS_STAGES, TILE_KEYS, TILE_BLOCKS, MAX_CHUNK = 4, 64, 4, 2048


def logits_dynamic_lds(name):
    """mxi/device/paged_logits.hpp logits_smem::bytes(units, group) for a row-scorer policy."""
    m = re.search(r"paged_logits_kernel<[^,]+, ([^,]+?), (\d+), (\d+),", name)
    if not m:
        return None
    policy, heads, waves = m.group(1), int(m.group(2)), int(m.group(3))
    stage = TILE_KEYS * 64 + TILE_KEYS * 4  # values, raw scale words
    if "gfx950_policy" in policy:
        return MAX_CHUNK * 8  # direct keys: no stages; Q, scales and weights live in registers
    if "generic_policy" in policy:
        stage += TILE_KEYS * TILE_BLOCKS * 4  # the keys' scales converted to fp32
        scratch = heads * (32 * 4 + TILE_BLOCKS * 4 + 4)  # int8 codes, fp32 scales, weights
    else:
        return None
    return LOGITS_STAGES * stage + MAX_CHUNK * 8 + waves * ((scratch + 15) // 16 * 16)


def dynamic_lds(name, static):
    if "paged_logits_kernel<" in name:
        return logits_dynamic_lds(name)
    if "row_select_kernel<" in name:
        # device/topk.hpp raises the limit to sharedMemPerBlockOptin and fits the row into it.
        return LDS_PER_CU - static
    return 0


def run(*args, **kw):
    return subprocess.run(args, check=True, capture_output=True, text=True, **kw).stdout


def tool(name):
    path = os.path.join(LLVM, name)
    return path if os.path.exists(path) else (shutil.which(name) or name)


def code_objects(build, work):
    """(object name, {arch: code object path}) for every HIP object in the library archive."""
    lib = os.path.join(build, "src", "libmxi.a")
    if not os.path.exists(lib):
        sys.exit(f"isa-gates: no {lib}; build the rocm preset first")
    members = os.path.join(work, "members")
    os.makedirs(members)
    run(tool("llvm-ar"), "x", os.path.abspath(lib), cwd=members)
    found = []
    for member in sorted(os.listdir(members)):
        path = os.path.join(members, member)
        sections = run(tool("llvm-readelf"), "-S", "-W", path)
        if ".hip_fatbin" not in sections:
            continue
        fat = os.path.join(work, member + ".fatbin")
        run(tool("llvm-objcopy"), "--dump-section=.hip_fatbin=" + fat, path, os.path.join(work, "scratch.o"))
        bundles = run(tool("clang-offload-bundler"), "--list", "--type=o", "--input=" + fat).split()
        cos = {}
        for arch in ARCHS:
            target = next((b for b in bundles if b.endswith("--" + arch)), None)
            if target is None:
                sys.exit(f"isa-gates: {member} has no {arch} code object (bundles: {bundles})")
            out = os.path.join(work, f"{member}.{arch}.co")
            run(tool("clang-offload-bundler"), "--unbundle", "--type=o", "--input=" + fat,
                "--targets=" + target, "--output=" + out)
            cos[arch] = out
        found.append((member, cos))
    if not found:
        sys.exit(f"isa-gates: no HIP device code in {lib}")
    return found


def kernel_metadata(co):
    """Kernel records from the NT_AMDGPU_METADATA note (llvm-readelf prints it as YAML)."""
    kernels, cur, in_kernels = [], None, False
    for line in run(tool("llvm-readelf"), "--notes", co).splitlines():
        if line.startswith("amdhsa.kernels:"):
            in_kernels = True
            continue
        if in_kernels and re.match(r"^\S", line):
            in_kernels = False
        if not in_kernels:
            continue
        m = re.match(r"^  - (\.\w+):\s*(.*)$", line)
        if m:
            cur = {}
            kernels.append(cur)
            cur[m.group(1)] = m.group(2).strip()
            continue
        m = re.match(r"^    (\.\w+):\s*(.*)$", line)
        if m and cur is not None:
            cur[m.group(1)] = m.group(2).strip()
    return kernels


def disassembly(co):
    """{symbol: [(address, mnemonic, operands)]} from llvm-objdump."""
    funcs, cur = {}, None
    text = run(tool("llvm-objdump"), "-d", "--no-show-raw-insn", co)
    for line in text.splitlines():
        m = re.match(r"^([0-9a-f]+) <(.+)>:$", line)
        if m:
            cur = funcs.setdefault(m.group(2), [])
            continue
        m = re.match(r"^\s+(\S+)\s*(.*?)\s*//\s*([0-9A-F]+):", line)
        if m and cur is not None:
            cur.append((int(m.group(3), 16), m.group(1), m.group(2)))
    return funcs


def demangle(names):
    out = run(tool("llvm-cxxfilt"), input="\n".join(names) + "\n").splitlines()
    return dict(zip(names, out))


def short(name):
    s = re.sub(r"\(.*\)$", "", name)
    s = re.sub(r"\bmxi::(device::detail::|device::|arch::|layout::|block::)?", "", s)
    s = re.sub(r"std::integral_constant<int, (\d+)>", r"\1", s)
    return s


def loops(code):
    """(start, end) address ranges of backward branches."""
    ranges = []
    for addr, op, operands in code:
        if not op.startswith("s_branch") and not op.startswith("s_cbranch"):
            continue
        m = re.match(r"(-?\d+)", operands)
        if not m:
            continue
        simm = int(m.group(1))
        simm = simm - 65536 if simm >= 32768 else simm
        target = addr + 4 + 4 * simm
        if target <= addr:
            ranges.append((target, addr))
    return ranges


def mfma_gate(code):
    """(problem or None, note) for a gfx950 logits kernel."""
    scaled = [(a, o) for a, op, o in code if op.startswith("v_mfma_scale_f32_16x16x128_f8f6f4")]
    fp4 = [(a, o) for a, o in scaled if "cbsz:4" in o and "blgp:4" in o]
    other = [o for op in [code] for a, m, o in op if m.startswith("v_mfma") and not m.startswith("v_mfma_scale")]
    in_loop = [a for a, _ in fp4 if any(s <= a <= e for s, e in loops(code))]
    # The scoring loop: the innermost loop around an FP4 MFMA.
    around = [(s, e) for s, e in loops(code) if any(s <= a <= e for a in in_loop)]
    inner = min(around, key=lambda r: r[1] - r[0]) if around else (1, 0)
    looped = [op for a, op, o in code if inner[0] <= a <= inner[1]]
    b128 = looped.count("ds_read_b128")
    # The head sum (arch/gfx950.hpp add_tile_heads): packed fmas, relu as one maximum.
    packed, relu = looped.count("v_pk_fma_f32"), looped.count("v_maximum3_f32")
    selects = sum(1 for op in looped if op.startswith("v_cndmask"))
    # The keys' stream (paged_logits_kernel, direct scorers): loads in the loop, never drained.
    key_loads = looped.count("global_load_dwordx4")
    vm_waits = sorted({int(m.group(1)) for a, op, o in code if inner[0] <= a <= inner[1]
                       and op == "s_waitcnt" for m in [re.search(r"vmcnt\((\d+)\)", o)] if m})
    note = (f"{len(in_loop)}/{len(scaled)} fp4 in loop, {b128} ds_read_b128, "
            f"{packed} v_pk_fma_f32, {relu} v_maximum3_f32, {selects} v_cndmask, "
            f"{key_loads} global_load_dwordx4, vmcnt waits {vm_waits}")
    if not in_loop or len(fp4) != len(scaled) or other:
        return "hot loop lacks FP4 scaled MFMA", note
    if not packed or not relu or selects:
        return "scoring loop's head sum not packed", note
    if not key_loads or b128 or 0 in vm_waits:
        return "scoring loop does not stream its keys", note
    return None, note


def main():
    build = sys.argv[1] if len(sys.argv) > 1 else "build/rocm"
    failures = []
    with tempfile.TemporaryDirectory(prefix="mxi-isa-") as work:
        for member, cos in code_objects(build, work):
            for arch in ARCHS:
                meta = kernel_metadata(cos[arch])
                code = disassembly(cos[arch])
                names = demangle([k[".name"] for k in meta])
                gated = arch == GATED_OCCUPANCY_ARCH
                print(f"\n{member} {arch}: {len(meta)} kernels" +
                      ("" if gated else " (scratch gate only)"))
                print(f"{'kernel':<78} {'vgpr':>4} {'agpr':>4} {'sgpr':>4} {'scr':>3} {'vsp':>3} {'ssp':>3} "
                      f"{'lds':>7} {'w/simd':>6}  mfma / notes")
                mfma_kernels = 0
                for k in sorted(meta, key=lambda k: names[k[".name"]]):
                    raw = k[".name"]
                    name = short(names[raw])
                    vgpr, agpr = int(k.get(".vgpr_count", 0)), int(k.get(".agpr_count", 0))
                    sgpr = int(k.get(".sgpr_count", 0))
                    scratch = int(k.get(".private_segment_fixed_size", 0))
                    spills = int(k.get(".vgpr_spill_count", 0))
                    # SGPR spills go to VGPR lanes (v_writelane), not memory: reported, not gated.
                    sgpr_spills = int(k.get(".sgpr_spill_count", 0))
                    dyn_stack = k.get(".uses_dynamic_stack", "false") == "true"
                    static = int(k.get(".group_segment_fixed_size", 0))
                    threads = int(k.get(".max_flat_workgroup_size", 1024))
                    problems, notes = [], []
                    if scratch or spills or dyn_stack:
                        problems.append(f"scratch {scratch} B, {spills} VGPR spills" +
                                        (", dynamic stack" if dyn_stack else ""))
                    dyn = dynamic_lds(name, static)
                    lds = static + (dyn or 0)
                    # Unified register file: arch VGPRs (accum_offset, granule 4) then AGPRs.
                    regs = (vgpr + 3) // 4 * 4 + agpr if agpr else vgpr
                    regs = max(VGPR_GRANULE, (regs + VGPR_GRANULE - 1) // VGPR_GRANULE * VGPR_GRANULE)
                    waves_regs = min(MAX_WAVES_PER_SIMD, VGPRS_PER_SIMD_LANE // regs)
                    block_waves = math.ceil(threads / 64)
                    if lds:
                        blocks = LDS_PER_CU // lds
                        waves_lds = blocks * block_waves // SIMDS_PER_CU
                    else:
                        waves_lds = MAX_WAVES_PER_SIMD
                    waves = min(waves_regs, waves_lds)
                    runs_here = not (gated and "paged_logits_kernel<" in name and "generic_policy" in name)
                    if gated and dyn is None:
                        problems.append("unknown dynamic LDS")
                    if gated and runs_here and waves < MIN_WAVES_PER_SIMD:
                        problems.append(f"{waves} waves/SIMD (regs {waves_regs}, lds {waves_lds})")
                    if gated and not runs_here:
                        notes.append("not selected on gfx950: occupancy not gated")
                    if gated and "paged_logits_kernel<" in name and "gfx950_policy" in name:
                        mfma_kernels += 1
                        problem, note = mfma_gate(code.get(raw, []))
                        notes.append(note)
                        if problem:
                            problems.append(problem)
                    verdict = "FAIL: " + "; ".join(problems) if problems else "ok"
                    print(f"{name[:78]:<78} {vgpr:>4} {agpr:>4} {sgpr:>4} {scratch:>3} {spills:>3} {sgpr_spills:>3} "
                          f"{lds:>7} {waves:>6}  {verdict}" + (f" ({', '.join(notes)})" if notes else ""))
                    failures += [f"{arch} {name}: {p}" for p in problems]
                if gated and member.startswith("backend") and mfma_kernels == 0:
                    failures.append(f"{arch} {member}: no gfx950_policy logits kernel instantiated")
    print()
    if failures:
        print(f"isa-gates: {len(failures)} violation(s):")
        for f in failures:
            print("  " + f)
        return 1
    print("isa-gates: all kernels pass (mfma, stream, scratch, occupancy)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
