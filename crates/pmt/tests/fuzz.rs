//! Property tests of the PMT tag encoding: random values round-trip bit for bit, and no input
//! (random bytes, cut or corrupted encodings) makes the decoder panic or claim bytes it was not
//! given. The cargo-fuzz style check for network frames, as a quick test.

use num_complex::{Complex32, Complex64};
use proptest::collection::vec;
use proptest::prelude::*;
use sluice_pmt as pmt;
use sluice_queue::{TagValue, Uniform};

fn uniform() -> impl Strategy<Value = Uniform> {
    let n = 0..6usize;
    prop_oneof![
        vec(any::<u8>(), n.clone()).prop_map(Uniform::from),
        vec(any::<i8>(), n.clone()).prop_map(Uniform::from),
        vec(any::<u16>(), n.clone()).prop_map(Uniform::from),
        vec(any::<i16>(), n.clone()).prop_map(Uniform::from),
        vec(any::<u32>(), n.clone()).prop_map(Uniform::from),
        vec(any::<i32>(), n.clone()).prop_map(Uniform::from),
        vec(any::<u64>(), n.clone()).prop_map(Uniform::from),
        vec(any::<i64>(), n.clone()).prop_map(Uniform::from),
        vec(any::<f32>(), n.clone()).prop_map(Uniform::from),
        vec(any::<f64>(), n.clone()).prop_map(Uniform::from),
        vec(any::<(f32, f32)>(), n.clone()).prop_map(|v| Uniform::from(
            v.into_iter()
                .map(|(re, im)| Complex32::new(re, im))
                .collect::<Vec<_>>()
        )),
        vec(any::<(f64, f64)>(), n).prop_map(|v| Uniform::from(
            v.into_iter()
                .map(|(re, im)| Complex64::new(re, im))
                .collect::<Vec<_>>()
        )),
    ]
}

fn tag_value() -> impl Strategy<Value = TagValue> {
    let leaf = prop_oneof![
        Just(TagValue::Null),
        any::<bool>().prop_map(TagValue::Bool),
        any::<i64>().prop_map(TagValue::I64),
        (-70_000i64..70_000).prop_map(TagValue::I64),
        any::<u64>().prop_map(TagValue::U64),
        any::<f64>().prop_map(TagValue::F64),
        any::<(f64, f64)>().prop_map(|(re, im)| TagValue::Complex(Complex64::new(re, im))),
        ".{0,12}".prop_map(TagValue::from),
        uniform().prop_map(TagValue::Uniform),
    ];
    leaf.prop_recursive(5, 64, 5, |inner| {
        prop_oneof![
            (inner.clone(), inner.clone()).prop_map(|(a, b)| TagValue::pair(a, b)),
            vec(inner.clone(), 0..5).prop_map(TagValue::Tuple),
            vec(inner.clone(), 0..5).prop_map(TagValue::Vector),
            // The empty dict is PMT_NIL; it is checked on its own in the unit tests.
            vec((inner.clone(), inner), 1..5).prop_map(TagValue::Dict),
        ]
    })
}

/// `value`'s debug text, so that NaN compares equal to itself (the byte checks compare bits).
fn canonical(value: &TagValue) -> String {
    format!("{value:?}")
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn random_values_round_trip_bit_for_bit(value in tag_value()) {
        let bytes = pmt::to_bytes(&value).unwrap();
        let (back, used) = pmt::decode(&bytes).unwrap();
        prop_assert_eq!(used, bytes.len());
        prop_assert_eq!(canonical(&back), canonical(&value));
        prop_assert_eq!(pmt::to_bytes(&back).unwrap(), bytes);
    }

    #[test]
    fn every_cut_of_an_encoding_is_an_error(value in tag_value()) {
        // The encoding is self-delimiting: no proper prefix is a whole value.
        let bytes = pmt::to_bytes(&value).unwrap();
        for cut in 0..bytes.len() {
            prop_assert!(pmt::decode(&bytes[..cut]).is_err(), "prefix of {} bytes", cut);
        }
    }

    #[test]
    fn corrupted_encodings_never_panic(
        value in tag_value(),
        flips in vec((any::<usize>(), any::<u8>()), 1..4),
    ) {
        let mut bytes = pmt::to_bytes(&value).unwrap();
        for (at, byte) in flips {
            let len = bytes.len();
            bytes[at % len] = byte;
        }
        if let Ok((back, used)) = pmt::decode(&bytes) {
            prop_assert!(used <= bytes.len());
            // Whatever it read is a value sluice can write again.
            prop_assert!(pmt::to_bytes(&back).is_ok());
        }
    }

    #[test]
    fn random_bytes_never_panic(bytes in vec(any::<u8>(), 0..64)) {
        if let Ok((back, used)) = pmt::decode(&bytes) {
            prop_assert!(used <= bytes.len());
            prop_assert!(pmt::to_bytes(&back).is_ok());
        }
    }

    #[test]
    fn random_bytes_behind_each_type_byte_never_panic(
        kind in 0u8..=0x0d,
        sub in 0u8..=0x0c,
        rest in vec(any::<u8>(), 0..48),
    ) {
        // Random bytes rarely start with a valid type byte and a plausible length; these do.
        let mut bytes = vec![kind, sub];
        bytes.extend(rest);
        if let Ok((_, used)) = pmt::decode(&bytes) {
            prop_assert!(used <= bytes.len());
        }
    }
}
