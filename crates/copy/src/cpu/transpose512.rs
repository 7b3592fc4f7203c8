//! AVX-512 in-register transposes of one block: 8 × 8 items of 8 bytes and 16 × 16 items of 4
//! bytes, loaded straight from the source rows and written to the output lines with
//! streaming stores (or plain ones when the result should stay in the cache). Row and column order are chosen by the caller, which is how one kernel
//! serves all four axis-swapping rotations.

use std::arch::x86_64::*;

/// Stores a line: streaming (past the caches) or plain.
///
/// # Safety
///
/// The CPU has AVX-512F; `to` is 64-byte aligned and valid for writes of 64 bytes.
#[inline]
#[target_feature(enable = "avx512f")]
unsafe fn put<const STREAM: bool>(to: *mut __m512i, v: __m512i) {
    // SAFETY: the contract.
    unsafe {
        if STREAM {
            _mm512_stream_si512(to, v)
        } else {
            _mm512_store_si512(to, v)
        }
    }
}

/// Transposes the 8 × 8 block whose rows start at `rows` (8 items of 8 bytes each) into the
/// lines `outs`: `outs[c]` receives column `c`, i.e. `rows[0][c], rows[1][c], …`.
///
/// # Safety
///
/// The CPU has AVX-512F; each `rows[i]` is valid for reads of 64 bytes; each `outs[c]` is
/// 64-byte aligned, valid for writes of 64 bytes, and disjoint from the rows.
#[target_feature(enable = "avx512f")]
pub(crate) unsafe fn block_u64<const STREAM: bool>(rows: &[*const u8; 8], outs: &[*mut u8; 8]) {
    // SAFETY: loads and stores as the contract allows.
    unsafe {
        let r: [__m512i; 8] = std::array::from_fn(|i| _mm512_loadu_si512(rows[i].cast()));
        let t0 = _mm512_unpacklo_epi64(r[0], r[1]);
        let t1 = _mm512_unpackhi_epi64(r[0], r[1]);
        let t2 = _mm512_unpacklo_epi64(r[2], r[3]);
        let t3 = _mm512_unpackhi_epi64(r[2], r[3]);
        let t4 = _mm512_unpacklo_epi64(r[4], r[5]);
        let t5 = _mm512_unpackhi_epi64(r[4], r[5]);
        let t6 = _mm512_unpacklo_epi64(r[6], r[7]);
        let t7 = _mm512_unpackhi_epi64(r[6], r[7]);
        let u0 = _mm512_shuffle_i64x2::<0x88>(t0, t2);
        let u1 = _mm512_shuffle_i64x2::<0xDD>(t0, t2);
        let u2 = _mm512_shuffle_i64x2::<0x88>(t1, t3);
        let u3 = _mm512_shuffle_i64x2::<0xDD>(t1, t3);
        let u4 = _mm512_shuffle_i64x2::<0x88>(t4, t6);
        let u5 = _mm512_shuffle_i64x2::<0xDD>(t4, t6);
        let u6 = _mm512_shuffle_i64x2::<0x88>(t5, t7);
        let u7 = _mm512_shuffle_i64x2::<0xDD>(t5, t7);
        put::<STREAM>(outs[0].cast(), _mm512_shuffle_i64x2::<0x88>(u0, u4));
        put::<STREAM>(outs[4].cast(), _mm512_shuffle_i64x2::<0xDD>(u0, u4));
        put::<STREAM>(outs[2].cast(), _mm512_shuffle_i64x2::<0x88>(u1, u5));
        put::<STREAM>(outs[6].cast(), _mm512_shuffle_i64x2::<0xDD>(u1, u5));
        put::<STREAM>(outs[1].cast(), _mm512_shuffle_i64x2::<0x88>(u2, u6));
        put::<STREAM>(outs[5].cast(), _mm512_shuffle_i64x2::<0xDD>(u2, u6));
        put::<STREAM>(outs[3].cast(), _mm512_shuffle_i64x2::<0x88>(u3, u7));
        put::<STREAM>(outs[7].cast(), _mm512_shuffle_i64x2::<0xDD>(u3, u7));
    }
}

/// Transposes the 16 × 16 block of 4-byte items whose rows start at `rows` into the lines
/// `outs` (`outs[c]` receives column `c`).
///
/// # Safety
///
/// As for [`block_u64`], with 16 rows and 16 lines.
#[target_feature(enable = "avx512f")]
pub(crate) unsafe fn block_u32<const STREAM: bool>(rows: &[*const u8; 16], outs: &[*mut u8; 16]) {
    // SAFETY: loads and stores as the contract allows.
    unsafe {
        let r: [__m512i; 16] = std::array::from_fn(|i| _mm512_loadu_si512(rows[i].cast()));
        // Per group g of four rows and e in 0..4: u[g][e] holds, in 128-bit lane k, column
        // 4k+e of rows 4g..4g+3.
        let mut u = [[_mm512_setzero_si512(); 4]; 4];
        for (g, ug) in u.iter_mut().enumerate() {
            let a = 4 * g;
            let t0 = _mm512_unpacklo_epi32(r[a], r[a + 1]);
            let t1 = _mm512_unpackhi_epi32(r[a], r[a + 1]);
            let t2 = _mm512_unpacklo_epi32(r[a + 2], r[a + 3]);
            let t3 = _mm512_unpackhi_epi32(r[a + 2], r[a + 3]);
            ug[0] = _mm512_unpacklo_epi64(t0, t2);
            ug[1] = _mm512_unpackhi_epi64(t0, t2);
            ug[2] = _mm512_unpacklo_epi64(t1, t3);
            ug[3] = _mm512_unpackhi_epi64(t1, t3);
        }
        for e in 0..4 {
            let lo01 = _mm512_shuffle_i32x4::<0x44>(u[0][e], u[1][e]);
            let hi01 = _mm512_shuffle_i32x4::<0xEE>(u[0][e], u[1][e]);
            let lo23 = _mm512_shuffle_i32x4::<0x44>(u[2][e], u[3][e]);
            let hi23 = _mm512_shuffle_i32x4::<0xEE>(u[2][e], u[3][e]);
            put::<STREAM>(outs[e].cast(), _mm512_shuffle_i32x4::<0x88>(lo01, lo23));
            put::<STREAM>(outs[4 + e].cast(), _mm512_shuffle_i32x4::<0xDD>(lo01, lo23));
            put::<STREAM>(outs[8 + e].cast(), _mm512_shuffle_i32x4::<0x88>(hi01, hi23));
            put::<STREAM>(
                outs[12 + e].cast(),
                _mm512_shuffle_i32x4::<0xDD>(hi01, hi23),
            );
        }
    }
}
