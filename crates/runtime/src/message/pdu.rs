//! PDUs: GNU Radio's protocol data units, a metadata dict and a uniform vector of samples or
//! bytes, carried as the pair `(dict . vector)` so that they cross gr-zeromq unchanged.

use sluice_queue::{TagValue, Uniform};

/// A protocol data unit: metadata (a dict, in order) and a vector of samples or bytes.
#[derive(Debug, Clone, PartialEq)]
pub struct Pdu {
    /// The metadata entries, keys usually symbols ([`TagValue::Str`]).
    pub meta: Vec<(TagValue, TagValue)>,
    /// The samples or bytes.
    pub data: Uniform,
}

impl Pdu {
    /// A PDU of `data` with no metadata.
    pub fn new(data: Uniform) -> Self {
        Pdu {
            meta: Vec::new(),
            data,
        }
    }

    /// The PDU a message holds, if it is one: a pair of a dict (or nil, GNU Radio's empty dict)
    /// and a uniform vector.
    pub fn from_message(msg: &TagValue) -> Option<Pdu> {
        let TagValue::Pair(pair) = msg else {
            return None;
        };
        let meta = match &pair.0 {
            TagValue::Dict(entries) => entries.clone(),
            TagValue::Null => Vec::new(),
            _ => return None,
        };
        match &pair.1 {
            TagValue::Uniform(data) => Some(Pdu {
                meta,
                data: data.clone(),
            }),
            _ => None,
        }
    }

    /// The PDU as a message: `(dict . vector)`.
    pub fn into_message(self) -> TagValue {
        TagValue::Pair(Box::new((
            TagValue::Dict(self.meta),
            TagValue::Uniform(self.data),
        )))
    }

    /// The metadata value under the symbol `key`, if any.
    pub fn get(&self, key: &str) -> Option<&TagValue> {
        self.meta
            .iter()
            .find(|(k, _)| matches!(k, TagValue::Str(s) if &**s == key))
            .map(|(_, v)| v)
    }

    /// Sets the metadata value under the symbol `key`, replacing an entry of that key in place
    /// (GNU Radio's `dict_add`), or appending one.
    pub fn set(&mut self, key: &str, value: TagValue) {
        match self
            .meta
            .iter_mut()
            .find(|(k, _)| matches!(k, TagValue::Str(s) if &**s == key))
        {
            Some(entry) => entry.1 = value,
            None => self.meta.push((TagValue::Str(key.into()), value)),
        }
    }
}

/// What a message costs an inbox, in bytes: its numbers and text, plus a few bytes per value
/// for its shape. Uniform vectors are shared between the connections of a fan-out, but each
/// inbox counts them, because each holds them alive.
pub fn message_bytes(msg: &TagValue) -> usize {
    const VALUE: usize = 8;
    match msg {
        TagValue::Null | TagValue::Bool(_) => VALUE,
        TagValue::I64(_) | TagValue::U64(_) | TagValue::F64(_) => VALUE,
        TagValue::Complex(_) => 2 * VALUE,
        TagValue::Str(s) => VALUE + s.len(),
        TagValue::Pair(pair) => VALUE + message_bytes(&pair.0) + message_bytes(&pair.1),
        TagValue::Tuple(items) | TagValue::Vector(items) => {
            VALUE + items.iter().map(message_bytes).sum::<usize>()
        }
        TagValue::Dict(entries) => {
            VALUE
                + entries
                    .iter()
                    .map(|(k, v)| message_bytes(k) + message_bytes(v))
                    .sum::<usize>()
        }
        TagValue::Uniform(u) => VALUE + u.len() * u.element_size(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pdu_survives_the_round_trip_through_a_message() {
        let mut pdu = Pdu::new(Uniform::F32(vec![1.0, 2.0].into()));
        pdu.set("burst", TagValue::I64(3));
        pdu.set("burst", TagValue::I64(4));
        assert_eq!(pdu.meta.len(), 1);
        let back = Pdu::from_message(&pdu.clone().into_message());
        assert_eq!(back.as_ref(), Some(&pdu));
        assert_eq!(
            back.and_then(|p| p.get("burst").cloned()),
            Some(TagValue::I64(4))
        );
    }

    #[test]
    fn nil_metadata_is_an_empty_dict_and_other_values_are_not_pdus() {
        let nil = TagValue::Pair(Box::new((
            TagValue::Null,
            TagValue::Uniform(Uniform::U8(vec![1, 2, 3].into())),
        )));
        assert_eq!(Pdu::from_message(&nil).map(|p| p.data.len()), Some(3));
        assert_eq!(Pdu::from_message(&TagValue::I64(1)), None);
        let not_vector = TagValue::Pair(Box::new((TagValue::Null, TagValue::I64(1))));
        assert_eq!(Pdu::from_message(&not_vector), None);
    }

    #[test]
    fn bytes_count_the_samples() {
        let pdu = Pdu::new(Uniform::C32(vec![Default::default(); 100].into())).into_message();
        assert!(message_bytes(&pdu) >= 800 && message_bytes(&pdu) < 900);
    }
}
