//! Seedable Gaussian noise: the generator behind the noise sources, the array generator and
//! the tests' random signals.

/// A small, fast, seedable generator (xoshiro128+ would do; this is splitmix64 feeding a
/// xorshift64*) with Gaussian output by Box–Muller. Deterministic per seed.
#[derive(Debug, Clone)]
pub struct Gaussian {
    state: u64,
}

impl Gaussian {
    /// A generator from `seed`.
    pub fn new(seed: u64) -> Self {
        // splitmix64 so that nearby seeds give unrelated streams; never zero.
        let mut z = seed.wrapping_add(0x9E37_79B9_7F4A_7C15);
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        Gaussian {
            state: (z ^ (z >> 31)) | 1,
        }
    }

    /// A uniform number in (0, 1].
    fn uniform(&mut self) -> f64 {
        self.state ^= self.state >> 12;
        self.state ^= self.state << 25;
        self.state ^= self.state >> 27;
        let bits = self.state.wrapping_mul(0x2545_F491_4F6C_DD1D) >> 11;
        (bits as f64 + 1.0) / (1u64 << 53) as f64
    }

    /// Two independent standard normal numbers.
    pub fn pair(&mut self) -> (f32, f32) {
        let r = (-2.0 * self.uniform().ln()).sqrt();
        let theta = std::f64::consts::TAU * self.uniform();
        ((r * theta.cos()) as f32, (r * theta.sin()) as f32)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gaussian_has_unit_variance_and_zero_mean() {
        let mut g = Gaussian::new(1);
        let n = 200_000;
        let (mut sum, mut sq) = (0.0f64, 0.0f64);
        for _ in 0..n / 2 {
            let (a, b) = g.pair();
            sum += f64::from(a) + f64::from(b);
            sq += f64::from(a * a) + f64::from(b * b);
        }
        let mean = sum / n as f64;
        let var = sq / n as f64 - mean * mean;
        assert!(mean.abs() < 0.01, "mean {mean}");
        assert!((var - 1.0).abs() < 0.02, "variance {var}");
    }
}
