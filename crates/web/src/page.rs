//! The console's page, embedded in the binary (plain JS and Canvas; nothing is fetched from
//! anywhere but this server).

/// The page.
pub(crate) const HTML: &str = include_str!("../assets/console.html");
/// Its style sheet (a file, not inline: the page's Content-Security-Policy allows only
/// this server's own files).
pub(crate) const CSS: &str = include_str!("../assets/console.css");
/// Its script.
pub(crate) const JS: &str = include_str!("../assets/console.js");
