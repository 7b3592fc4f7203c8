//! Frequency-domain multiply-accumulate kernels and the floating-point environment.
//!
//! Spectra are stored *packed and split*: a real FFT of `2S` points has `S + 1` bins, of which
//! bin 0 (DC) and bin `S` (Nyquist) are purely real. We keep `S` bins in two arrays `re`, `im`
//! and put the Nyquist real part into `im[0]`. The MAC loop then runs over `S` lanes (a
//! multiple of 8 for `S >= 8`) with no remainder, and the compiler vectorises it; bin 0 is
//! fixed up afterwards. The AVX2+FMA variant is chosen at run time.

/// `acc += sum_n x_n * h_n` over packed split spectra, `N` partitions at a time.
#[inline(always)]
fn mac_body<const N: usize, const FMA: bool>(
    acc_re: &mut [f32],
    acc_im: &mut [f32],
    xr: [&[f32]; N],
    xi: [&[f32]; N],
    hr: [&[f32]; N],
    hi: [&[f32]; N],
) {
    let len = acc_re.len();
    let acc_im = &mut acc_im[..len];
    let save_re = acc_re[0];
    let save_im = acc_im[0];
    let xr = xr.map(|s| &s[..len]);
    let xi = xi.map(|s| &s[..len]);
    let hr = hr.map(|s| &s[..len]);
    let hi = hi.map(|s| &s[..len]);
    for b in 0..len {
        let mut re = acc_re[b];
        let mut im = acc_im[b];
        for n in 0..N {
            let (a, c, d, e) = (xr[n][b], xi[n][b], hr[n][b], hi[n][b]);
            if FMA {
                re = a.mul_add(d, re);
                re = (-c).mul_add(e, re);
                im = a.mul_add(e, im);
                im = c.mul_add(d, im);
            } else {
                re = re + a * d - c * e;
                im = im + a * e + c * d;
            }
        }
        acc_re[b] = re;
        acc_im[b] = im;
    }
    // Bin 0 holds (DC, Nyquist), two independent real products.
    let mut re = save_re;
    let mut im = save_im;
    for n in 0..N {
        re += xr[n][0] * hr[n][0];
        im += xi[n][0] * hi[n][0];
    }
    acc_re[0] = re;
    acc_im[0] = im;
}

/// # Safety
/// The CPU must support AVX2 and FMA.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn mac_fma<const N: usize>(
    acc_re: &mut [f32],
    acc_im: &mut [f32],
    xr: [&[f32]; N],
    xi: [&[f32]; N],
    hr: [&[f32]; N],
    hi: [&[f32]; N],
) {
    mac_body::<N, true>(acc_re, acc_im, xr, xi, hr, hi)
}

fn mac_plain<const N: usize>(
    acc_re: &mut [f32],
    acc_im: &mut [f32],
    xr: [&[f32]; N],
    xi: [&[f32]; N],
    hr: [&[f32]; N],
    hi: [&[f32]; N],
) {
    mac_body::<N, false>(acc_re, acc_im, xr, xi, hr, hi)
}

/// The MAC kernel chosen for this CPU; cheap to copy, same results in every thread.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Mac {
    fma: bool,
}

impl Mac {
    /// Detects AVX2+FMA once.
    pub(crate) fn detect() -> Self {
        #[cfg(target_arch = "x86_64")]
        let fma = std::is_x86_feature_detected!("avx2") && std::is_x86_feature_detected!("fma");
        #[cfg(not(target_arch = "x86_64"))]
        let fma = false;
        Self { fma }
    }

    /// `acc += x * h` for `N` partitions; all slices at least `acc_re.len()` long.
    #[inline]
    pub(crate) fn run<const N: usize>(
        self,
        acc_re: &mut [f32],
        acc_im: &mut [f32],
        xr: [&[f32]; N],
        xi: [&[f32]; N],
        hr: [&[f32]; N],
        hi: [&[f32]; N],
    ) {
        #[cfg(target_arch = "x86_64")]
        if self.fma {
            // SAFETY: `self.fma` is only true when the CPU reported AVX2 and FMA.
            unsafe { mac_fma::<N>(acc_re, acc_im, xr, xi, hr, hi) };
            return;
        }
        mac_plain::<N>(acc_re, acc_im, xr, xi, hr, hi)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reference(acc: (&mut [f32], &mut [f32]), x: (&[f32], &[f32]), h: (&[f32], &[f32])) {
        let n = acc.0.len();
        for b in 1..n {
            let (a, c, d, e) = (x.0[b] as f64, x.1[b] as f64, h.0[b] as f64, h.1[b] as f64);
            acc.0[b] += (a * d - c * e) as f32;
            acc.1[b] += (a * e + c * d) as f32;
        }
        acc.0[0] += x.0[0] * h.0[0];
        acc.1[0] += x.1[0] * h.1[0];
    }

    #[test]
    fn mac_matches_scalar_reference_for_both_kernels() {
        let n = 64;
        let v = |s: f32| (0..n).map(|i| ((i as f32) * s).sin()).collect::<Vec<_>>();
        let (xr, xi, hr, hi) = (v(0.3), v(0.7), v(1.1), v(1.9));
        for fma in [false, true] {
            let mac = Mac {
                fma: fma && Mac::detect().fma,
            };
            let (mut ar, mut ai) = (v(0.2), v(0.5));
            let (mut rr, mut ri) = (ar.clone(), ai.clone());
            for _ in 0..4 {
                reference((&mut rr, &mut ri), (&xr, &xi), (&hr, &hi));
            }
            mac.run::<4>(&mut ar, &mut ai, [&xr; 4], [&xi; 4], [&hr; 4], [&hi; 4]);
            for b in 0..n {
                assert!((ar[b] - rr[b]).abs() < 1e-5, "re bin {b}");
                assert!((ai[b] - ri[b]).abs() < 1e-5, "im bin {b}");
            }
        }
    }
}
