//! Without libSoapySDR, every entry point says which Debian package to install. (Its own test
//! binary: the library is looked up once per process, here under a name that does not exist.)

use sluice_soapy::{ffi::LIBRARY_VARIABLE, SoapyError};

#[test]
fn a_missing_library_names_the_debian_package() {
    std::env::set_var(LIBRARY_VARIABLE, "/nonexistent/libSoapySDR.so.0.8");
    let e = sluice_soapy::enumerate("").unwrap_err();
    assert!(matches!(e, SoapyError::NotInstalled { .. }), "{e:?}");
    let text = e.to_string();
    assert!(
        text.starts_with("libSoapySDR could not be loaded (/nonexistent/libSoapySDR.so.0.8: "),
        "{text}"
    );
    assert!(
        text.contains("install Debian's package libsoapysdr0.8 (apt-get install libsoapysdr0.8)"),
        "{text}"
    );
    let e = sluice_soapy::Device::open("driver=rtlsdr").unwrap_err();
    assert_eq!(e.to_string(), text);
}
