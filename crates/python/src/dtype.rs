//! Item types as numpy sees them: complex64 ↔ c32, float32 ↔ f32, int16 ↔ i16, uint8 ↔ u8.

use num_complex::Complex32;
use pyo3::prelude::*;
use sluice_runtime::ItemType;

/// An item type that crosses into numpy.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dtype {
    /// Complex float (numpy complex64).
    C32,
    /// Float (numpy float32).
    F32,
    /// 16-bit signed integer (numpy int16).
    I16,
    /// Byte (numpy uint8).
    U8,
}

/// Runs `$body` with `$T` the Rust item type of `$dtype`.
macro_rules! with_dtype {
    ($dtype:expr, $T:ident => $body:expr) => {
        match $dtype {
            $crate::dtype::Dtype::C32 => {
                type $T = num_complex::Complex32;
                $body
            }
            $crate::dtype::Dtype::F32 => {
                type $T = f32;
                $body
            }
            $crate::dtype::Dtype::I16 => {
                type $T = i16;
                $body
            }
            $crate::dtype::Dtype::U8 => {
                type $T = u8;
                $body
            }
        }
    };
}
pub(crate) use with_dtype;

impl Dtype {
    /// Every dtype, in the order error messages list them.
    pub const ALL: [Dtype; 4] = [Dtype::C32, Dtype::F32, Dtype::I16, Dtype::U8];

    /// sluice's name for it (`c32`).
    pub fn name(self) -> &'static str {
        match self {
            Dtype::C32 => "c32",
            Dtype::F32 => "f32",
            Dtype::I16 => "i16",
            Dtype::U8 => "u8",
        }
    }

    /// numpy's name for it (`complex64`).
    pub fn numpy(self) -> &'static str {
        match self {
            Dtype::C32 => "complex64",
            Dtype::F32 => "float32",
            Dtype::I16 => "int16",
            Dtype::U8 => "uint8",
        }
    }

    /// The array interface's type string (little-endian, as the queues hold items).
    pub fn typestr(self) -> &'static str {
        match self {
            Dtype::C32 => "<c8",
            Dtype::F32 => "<f4",
            Dtype::I16 => "<i2",
            Dtype::U8 => "|u1",
        }
    }

    /// Bytes per item.
    pub fn size(self) -> usize {
        with_dtype!(self, T => std::mem::size_of::<T>())
    }

    /// The runtime's item type.
    pub fn item_type(self) -> ItemType {
        with_dtype!(self, T => ItemType::of::<T>())
    }

    /// The dtype of a runtime item type, if numpy can hold it here.
    pub fn of_item(item: ItemType) -> Option<Dtype> {
        Dtype::ALL.into_iter().find(|d| d.item_type() == item)
    }

    /// A name in either spelling (`c32`/`complex64`, `f32`/`float32`, ...).
    pub fn from_name(name: &str) -> Option<Dtype> {
        Dtype::ALL
            .into_iter()
            .find(|d| d.name() == name || d.numpy() == name)
    }

    /// The dtype `obj` names: a string in either spelling or anything `numpy.dtype()` takes.
    pub fn extract(obj: &Bound<'_, PyAny>) -> PyResult<Dtype> {
        let name = match obj.extract::<String>() {
            Ok(s) => s,
            Err(_) => {
                let np = obj.py().import("numpy")?;
                np.getattr("dtype")?
                    .call1((obj,))?
                    .getattr("name")?
                    .extract::<String>()?
            }
        };
        Dtype::from_name(&name).ok_or_else(|| {
            let known: Vec<String> = Dtype::ALL
                .iter()
                .map(|d| format!("{} ({})", d.name(), d.numpy()))
                .collect();
            crate::errors::raise::<crate::errors::ItemTypeError>(
                format!(
                    "dtype '{name}' has no sluice item type (sluice carries {})",
                    known.join(", ")
                ),
                None,
                None,
                None,
            )
        })
    }
}

/// Keeps the compiler honest that complex items are two f32s, as numpy's complex64.
const _: () = assert!(std::mem::size_of::<Complex32>() == 8);
