//! The console's page, embedded in the binary (plain JS and Canvas; nothing is fetched from
//! anywhere but this server).

/// The page.
pub(crate) const HTML: &str = include_str!("../assets/console.html");
/// Its script.
pub(crate) const JS: &str = include_str!("../assets/console.js");
