//! The protobuf wire format's primitives: varints, tags, length-delimited and fixed-width values.
//! Every read is bounds-checked and returns an error instead of panicking on truncated or hostile input.

use super::ProtoError;

/// The wire type of a field's value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum WireType {
    /// int32, int64, uint32, uint64, sint32, sint64, bool.
    Varint,
    /// fixed64, sfixed64, double.
    Fixed64,
    /// string, bytes, messages, packed repeated scalars.
    Len,
    /// fixed32, sfixed32, float.
    Fixed32,
}

impl WireType {
    fn from_bits(bits: u64) -> Option<WireType> {
        match bits {
            0 => Some(WireType::Varint),
            1 => Some(WireType::Fixed64),
            2 => Some(WireType::Len),
            5 => Some(WireType::Fixed32),
            _ => None,
        }
    }

    fn bits(self) -> u64 {
        match self {
            WireType::Varint => 0,
            WireType::Fixed64 => 1,
            WireType::Len => 2,
            WireType::Fixed32 => 5,
        }
    }
}

/// A cursor over an encoded message.
#[derive(Debug)]
pub(super) struct Reader<'a> {
    buf: &'a [u8],
}

impl<'a> Reader<'a> {
    pub(super) fn new(buf: &'a [u8]) -> Self {
        Reader { buf }
    }

    pub(super) fn is_empty(&self) -> bool {
        self.buf.is_empty()
    }

    pub(super) fn varint(&mut self) -> Result<u64, ProtoError> {
        let mut value: u64 = 0;
        for i in 0..10 {
            let (&b, rest) = self
                .buf
                .split_first()
                .ok_or_else(|| ProtoError::new("truncated varint"))?;
            self.buf = rest;
            if i == 9 && b > 1 {
                return Err(ProtoError::new("varint overflows 64 bits"));
            }
            value |= u64::from(b & 0x7f) << (7 * i);
            if b & 0x80 == 0 {
                return Ok(value);
            }
        }
        Err(ProtoError::new("varint longer than 10 bytes"))
    }

    /// The next field's number and wire type.
    pub(super) fn tag(&mut self) -> Result<(u32, WireType), ProtoError> {
        let key = self.varint()?;
        let number = u32::try_from(key >> 3).map_err(|_| ProtoError::new("field number out of range"))?;
        if number == 0 {
            return Err(ProtoError::new("field number 0"));
        }
        let wire = WireType::from_bits(key & 7)
            .ok_or_else(|| ProtoError::new(format!("unsupported wire type {} (field {number})", key & 7)))?;
        Ok((number, wire))
    }

    pub(super) fn bytes(&mut self) -> Result<&'a [u8], ProtoError> {
        let len = self.varint()?;
        let len = usize::try_from(len).map_err(|_| ProtoError::new("length out of range"))?;
        if len > self.buf.len() {
            return Err(ProtoError::new(format!(
                "length {len} runs past the end of the message ({} bytes left)",
                self.buf.len()
            )));
        }
        let (head, rest) = self.buf.split_at(len);
        self.buf = rest;
        Ok(head)
    }

    pub(super) fn fixed32(&mut self) -> Result<u32, ProtoError> {
        let Some((head, rest)) = self.buf.split_first_chunk::<4>() else {
            return Err(ProtoError::new("truncated fixed32"));
        };
        self.buf = rest;
        Ok(u32::from_le_bytes(*head))
    }

    pub(super) fn fixed64(&mut self) -> Result<u64, ProtoError> {
        let Some((head, rest)) = self.buf.split_first_chunk::<8>() else {
            return Err(ProtoError::new("truncated fixed64"));
        };
        self.buf = rest;
        Ok(u64::from_le_bytes(*head))
    }

    /// Skips a value of the given wire type (an unknown field).
    pub(super) fn skip(&mut self, wire: WireType) -> Result<(), ProtoError> {
        match wire {
            WireType::Varint => self.varint().map(drop),
            WireType::Fixed64 => self.fixed64().map(drop),
            WireType::Len => self.bytes().map(drop),
            WireType::Fixed32 => self.fixed32().map(drop),
        }
    }
}

/// Appends encoded values to a buffer.
#[derive(Debug, Default)]
pub(super) struct Writer {
    pub(super) buf: Vec<u8>,
}

impl Writer {
    pub(super) fn varint(&mut self, mut v: u64) {
        while v >= 0x80 {
            self.buf.push((v as u8 & 0x7f) | 0x80);
            v >>= 7;
        }
        self.buf.push(v as u8);
    }

    pub(super) fn tag(&mut self, number: u32, wire: WireType) {
        self.varint((u64::from(number) << 3) | wire.bits());
    }

    pub(super) fn bytes(&mut self, number: u32, data: &[u8]) {
        self.tag(number, WireType::Len);
        self.varint(data.len() as u64);
        self.buf.extend_from_slice(data);
    }

    pub(super) fn fixed32(&mut self, v: u32) {
        self.buf.extend_from_slice(&v.to_le_bytes());
    }

    pub(super) fn fixed64(&mut self, v: u64) {
        self.buf.extend_from_slice(&v.to_le_bytes());
    }
}

/// ZigZag decoding (sint32, sint64).
pub(super) fn unzigzag(v: u64) -> i64 {
    ((v >> 1) as i64) ^ -((v & 1) as i64)
}

/// ZigZag encoding.
pub(super) fn zigzag(v: i64) -> u64 {
    ((v << 1) ^ (v >> 63)) as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn varints_round_trip_at_the_limits() {
        for v in [0, 1, 127, 128, 300, u64::from(u32::MAX), i64::MAX as u64, u64::MAX] {
            let mut w = Writer::default();
            w.varint(v);
            assert_eq!(Reader::new(&w.buf).varint().unwrap(), v);
        }
        for v in [0i64, -1, 1, i64::MIN, i64::MAX, i64::from(i32::MIN)] {
            assert_eq!(unzigzag(zigzag(v)), v);
        }
    }

    #[test]
    fn hostile_input_is_an_error() {
        assert!(Reader::new(&[0x80; 11]).varint().is_err());
        assert!(Reader::new(&[0xff; 9]).varint().is_err());
        assert!(
            Reader::new(&[0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02])
                .varint()
                .is_err()
        );
        let mut r = Reader::new(&[0x05, 0x01]);
        assert!(r.bytes().is_err());
        assert!(Reader::new(&[0x03]).tag().is_err()); // group wire type
        assert!(Reader::new(&[0x00]).tag().is_err()); // field 0
        assert!(Reader::new(&[1, 2, 3]).fixed32().is_err());
    }
}
