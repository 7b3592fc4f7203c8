//! The font for text in pictures: the first of a few usual system paths (DejaVu, Liberation,
//! URW), or the one `SLUICE_PLOT_FONT` names, is loaded at run time and registered once for
//! "sans-serif". Without one, pictures are still drawn, axes and data without labels.

use plotters::prelude::FontStyle;
use std::sync::OnceLock;

const FONT_PATHS: [&str; 5] = [
    "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf",
    "/usr/share/fonts/TTF/DejaVuSans.ttf",
    "/usr/share/fonts/truetype/liberation/LiberationSans-Regular.ttf",
    "/usr/share/fonts/opentype/urw-base35/NimbusSans-Regular.otf",
    "/usr/share/fonts/dejavu/DejaVuSans.ttf",
];

/// Registers a font for "sans-serif" once; whether one was found.
pub(crate) fn font_available() -> bool {
    static FOUND: OnceLock<bool> = OnceLock::new();
    *FOUND.get_or_init(|| {
        let env = std::env::var("SLUICE_PLOT_FONT").ok();
        for path in env.iter().map(String::as_str).chain(FONT_PATHS) {
            if let Ok(bytes) = std::fs::read(path) {
                // The font must live as long as the program: leaked once.
                let bytes: &'static [u8] = Box::leak(bytes.into_boxed_slice());
                if plotters::style::register_font("sans-serif", FontStyle::Normal, bytes).is_ok() {
                    return true;
                }
            }
        }
        false
    })
}
