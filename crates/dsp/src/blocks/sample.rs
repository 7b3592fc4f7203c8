//! The sample types that signal blocks generate and measure: `f32` and `Complex32`.

use num_complex::Complex32;
use sluice_runtime::Item;

/// A real or complex sample.
pub trait Sample: Item + Default + crate::kernels::Scalable {
    /// `amplitude · cos(phase)` for reals, `amplitude · e^{j·phase}` for complex.
    fn tone(phase: f64, amplitude: f32) -> Self;
    /// Gaussian noise of standard deviation `amplitude` (per component for complex, with the
    /// total power `amplitude²`), from two independent standard normals.
    fn noise(g1: f32, g2: f32, amplitude: f32) -> Self;
    /// `|x|²`.
    fn power(self) -> f64;
    /// The type's name in graph files (`f32`, `c32`).
    const NAME: &'static str;
}

impl Sample for f32 {
    fn tone(phase: f64, amplitude: f32) -> Self {
        amplitude * phase.cos() as f32
    }
    fn noise(g1: f32, _g2: f32, amplitude: f32) -> Self {
        amplitude * g1
    }
    fn power(self) -> f64 {
        f64::from(self) * f64::from(self)
    }
    const NAME: &'static str = "f32";
}

impl Sample for Complex32 {
    fn tone(phase: f64, amplitude: f32) -> Self {
        let (s, c) = phase.sin_cos();
        Complex32::new(amplitude * c as f32, amplitude * s as f32)
    }
    fn noise(g1: f32, g2: f32, amplitude: f32) -> Self {
        let scale = amplitude * std::f32::consts::FRAC_1_SQRT_2;
        Complex32::new(scale * g1, scale * g2)
    }
    fn power(self) -> f64 {
        f64::from(self.norm_sqr())
    }
    const NAME: &'static str = "c32";
}

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

/// The node of a block generic over [`Sample`], for the type its `item` parameter names
/// (declared as `c32` or `f32`): `for_sample!(params, S => Rated::new(MyBlock::<S>::new()))`.
macro_rules! for_sample {
    ($params:expr, $S:ident => $make:expr) => {{
        let node: Box<dyn sluice_runtime::Node> = match $params.str("item")?.as_str() {
            "f32" => {
                type $S = f32;
                Box::new($make)
            }
            _ => {
                type $S = num_complex::Complex32;
                Box::new($make)
            }
        };
        Ok(node)
    }};
}
pub(crate) use for_sample;

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

    #[test]
    fn complex_noise_power_is_amplitude_squared() {
        let mut g = Gaussian::new(2);
        let n = 100_000;
        let p: f64 = (0..n)
            .map(|_| {
                let (a, b) = g.pair();
                Complex32::noise(a, b, 0.5).power()
            })
            .sum::<f64>()
            / n as f64;
        assert!((p - 0.25).abs() < 0.01, "power {p}");
    }
}
