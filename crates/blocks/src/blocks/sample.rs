//! The sample types that signal blocks generate and measure: `f32` and `Complex32`.

use num_complex::Complex32;
use sluice_runtime::Item;

pub use sluice_kernels::Gaussian;

/// A real or complex sample.
pub trait Sample: Item + Default + sluice_kernels::Scalable {
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
