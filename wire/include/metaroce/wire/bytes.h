// Big-endian (network order) field access and bounds-checked cursors.
//
// Every decoder in the wire layer reads through ByteReader, which refuses to
// read past the end of its span; a failed read poisons the reader so a caller
// checks ok() once after decoding a whole header instead of after each field.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>

namespace metaroce::wire {

inline uint16_t load_be16(const uint8_t* p) { return static_cast<uint16_t>((p[0] << 8) | p[1]); }
inline uint32_t load_be24(const uint8_t* p) {
  return (static_cast<uint32_t>(p[0]) << 16) | (static_cast<uint32_t>(p[1]) << 8) | p[2];
}
inline uint32_t load_be32(const uint8_t* p) {
  return (static_cast<uint32_t>(p[0]) << 24) | (static_cast<uint32_t>(p[1]) << 16) |
         (static_cast<uint32_t>(p[2]) << 8) | p[3];
}
inline uint64_t load_be64(const uint8_t* p) {
  return (static_cast<uint64_t>(load_be32(p)) << 32) | load_be32(p + 4);
}
inline void store_be16(uint8_t* p, uint16_t v) {
  p[0] = static_cast<uint8_t>(v >> 8);
  p[1] = static_cast<uint8_t>(v);
}
inline void store_be24(uint8_t* p, uint32_t v) {
  p[0] = static_cast<uint8_t>(v >> 16);
  p[1] = static_cast<uint8_t>(v >> 8);
  p[2] = static_cast<uint8_t>(v);
}
inline void store_be32(uint8_t* p, uint32_t v) {
  p[0] = static_cast<uint8_t>(v >> 24);
  p[1] = static_cast<uint8_t>(v >> 16);
  p[2] = static_cast<uint8_t>(v >> 8);
  p[3] = static_cast<uint8_t>(v);
}
inline void store_be64(uint8_t* p, uint64_t v) {
  store_be32(p, static_cast<uint32_t>(v >> 32));
  store_be32(p + 4, static_cast<uint32_t>(v));
}

class ByteReader {
 public:
  explicit ByteReader(std::span<const uint8_t> buf) : buf_(buf) {}
  bool ok() const { return ok_; }
  size_t offset() const { return pos_; }
  size_t remaining() const { return ok_ ? buf_.size() - pos_ : 0; }

  uint8_t u8() { return need(1) ? buf_[pos_++] : 0; }
  uint16_t u16() { return need(2) ? advance(2, load_be16(&buf_[pos_])) : 0; }
  uint32_t u24() { return need(3) ? advance(3, load_be24(&buf_[pos_])) : 0; }
  uint32_t u32() { return need(4) ? advance(4, load_be32(&buf_[pos_])) : 0; }
  uint64_t u64() { return need(8) ? advance(8, load_be64(&buf_[pos_])) : 0; }
  void bytes(uint8_t* out, size_t n) {
    if (need(n)) {
      std::memcpy(out, &buf_[pos_], n);
      pos_ += n;
    }
  }
  void skip(size_t n) {
    if (need(n)) pos_ += n;
  }

 private:
  bool need(size_t n) {
    if (!ok_ || buf_.size() - pos_ < n) ok_ = false;
    return ok_;
  }
  template <typename T>
  T advance(size_t n, T v) {
    pos_ += n;
    return v;
  }
  std::span<const uint8_t> buf_;
  size_t pos_ = 0;
  bool ok_ = true;
};

class ByteWriter {
 public:
  explicit ByteWriter(std::span<uint8_t> buf) : buf_(buf) {}
  bool ok() const { return ok_; }
  size_t offset() const { return pos_; }

  void u8(uint8_t v) {
    if (need(1)) buf_[pos_++] = v;
  }
  void u16(uint16_t v) {
    if (need(2)) store_be16(&buf_[pos_], v), pos_ += 2;
  }
  void u24(uint32_t v) {
    if (need(3)) store_be24(&buf_[pos_], v), pos_ += 3;
  }
  void u32(uint32_t v) {
    if (need(4)) store_be32(&buf_[pos_], v), pos_ += 4;
  }
  void u64(uint64_t v) {
    if (need(8)) store_be64(&buf_[pos_], v), pos_ += 8;
  }
  void bytes(const uint8_t* in, size_t n) {
    if (need(n)) {
      if (n) std::memcpy(&buf_[pos_], in, n);
      pos_ += n;
    }
  }
  void zeros(size_t n) {
    if (need(n)) {
      std::memset(&buf_[pos_], 0, n);
      pos_ += n;
    }
  }

 private:
  bool need(size_t n) {
    if (!ok_ || buf_.size() - pos_ < n) ok_ = false;
    return ok_;
  }
  std::span<uint8_t> buf_;
  size_t pos_ = 0;
  bool ok_ = true;
};

}  // namespace metaroce::wire
