-- Wireshark dissector for MetaRoCE wire format v1 (docs/spec/metaroce-wire-v1.md).
-- Works with Wireshark/tshark 4.0 (Lua 5.2). Install: bash scripts/install-dissector.sh
-- (copies this file into the personal plugin folder), or for one run:
--   tshark -X lua_script:wireshark/metaroce.lua -r capture.pcapng
--
-- Every header and field of the spec is shown; the per-path SACK is shown as
-- the ranges of path_seq it reports received and missing; the CRC32C trailer
-- is checked. Malformed or inconsistent packets get expert info (group
-- Malformed, severity Error) naming the check of spec section 10 they fail.

local metaroce = Proto("metaroce", "MetaRoCE v1")

local OPCODES = {
  [0x01] = "WRITE", [0x02] = "WRITE_IMM", [0x03] = "SEND", [0x04] = "SEND_IMM",
  [0x05] = "READ_REQ", [0x06] = "READ_RESP", [0x07] = "FETCH_ADD", [0x08] = "CMP_SWAP",
  [0x09] = "ATOMIC_RESP", [0x0A] = "PROBE", [0x10] = "ACK", [0x11] = "NAK",
}
-- Extension header bytes per opcode (spec section 4).
local EXT_LEN = {
  [0x01] = 16, [0x02] = 16, [0x03] = 8, [0x04] = 8, [0x05] = 16, [0x06] = 0,
  [0x07] = 32, [0x08] = 32, [0x09] = 8, [0x0A] = 0, [0x10] = 8, [0x11] = 12,
}
local HAS_PAYLOAD = { [0x01] = true, [0x02] = true, [0x03] = true, [0x04] = true, [0x06] = true }
local NAK_CODES = {
  [0x01] = "RNR", [0x02] = "BAD_KEY", [0x03] = "OUT_OF_BOUNDS", [0x04] = "ACCESS_VIOLATION",
  [0x05] = "UNKNOWN_CONNECTION", [0x06] = "INVALID_REQUEST",
}
local COMMON_BYTES, CRC_BYTES, BLOCK_BYTES, MAX_BLOCKS, SACK_BITS = 40, 4, 44, 8, 256

local f = metaroce.fields
f.version = ProtoField.uint8("metaroce.version", "Version", base.DEC, nil, 0xF0)
f.version_reserved = ProtoField.uint8("metaroce.version_reserved", "Reserved", base.HEX, nil, 0x0F)
f.opcode = ProtoField.uint8("metaroce.opcode", "Opcode", base.HEX, OPCODES)
f.flags = ProtoField.uint8("metaroce.flags", "Flags", base.HEX)
f.flag_ack_req = ProtoField.bool("metaroce.flags.ack_req", "ACK_REQ", 8, nil, 0x01)
f.flag_first = ProtoField.bool("metaroce.flags.first", "FIRST", 8, nil, 0x02)
f.flag_last = ProtoField.bool("metaroce.flags.last", "LAST", 8, nil, 0x04)
f.flag_retx = ProtoField.bool("metaroce.flags.retx", "RETX", 8, nil, 0x08)
f.flag_reserved = ProtoField.uint8("metaroce.flags.reserved", "Reserved", base.HEX, nil, 0xF0)
f.path_id = ProtoField.uint8("metaroce.path_id", "Path", base.DEC)
f.dst_conn_id = ProtoField.uint32("metaroce.dst_conn_id", "Destination connection", base.HEX)
f.src_conn_id = ProtoField.uint32("metaroce.src_conn_id", "Source connection", base.HEX)
f.stream_id = ProtoField.uint16("metaroce.stream_id", "Stream", base.DEC)
f.payload_len = ProtoField.uint16("metaroce.payload_len", "Payload length", base.DEC)
f.path_seq = ProtoField.uint32("metaroce.path_seq", "Path sequence", base.DEC)
f.path_floor = ProtoField.uint32("metaroce.path_floor", "Path floor", base.DEC)
f.msg_seq = ProtoField.uint32("metaroce.msg_seq", "Message sequence", base.DEC)
f.watermark = ProtoField.uint32("metaroce.watermark", "Receive watermark", base.DEC)
f.msg_offset = ProtoField.uint32("metaroce.msg_offset", "Message offset", base.DEC)
f.msg_len = ProtoField.uint32("metaroce.msg_len", "Message length", base.DEC)
f.tx_ts = ProtoField.uint32("metaroce.tx_ts", "Transmit timestamp (ns, low 32 bits)", base.DEC)
f.remote_addr = ProtoField.uint64("metaroce.remote_addr", "Remote address", base.HEX)
f.rkey = ProtoField.uint32("metaroce.rkey", "Remote key", base.HEX)
f.imm = ProtoField.uint32("metaroce.imm", "Immediate", base.HEX)
f.recv_seq = ProtoField.uint32("metaroce.recv_seq", "Receive sequence", base.DEC)
f.read_length = ProtoField.uint32("metaroce.read_length", "Read length", base.DEC)
f.atomic_reserved = ProtoField.uint32("metaroce.atomic_reserved", "Reserved", base.HEX)
f.operand = ProtoField.uint64("metaroce.operand", "Operand (add or swap)", base.HEX)
f.compare = ProtoField.uint64("metaroce.compare", "Compare", base.HEX)
f.original = ProtoField.uint64("metaroce.original", "Original value", base.HEX)
f.rate_hint = ProtoField.uint32("metaroce.rate_hint_kbps", "Rate hint (kbit/s, 0 = no limit)", base.DEC)
f.num_blocks = ProtoField.uint8("metaroce.num_blocks", "ACK blocks", base.DEC)
f.reserved = ProtoField.bytes("metaroce.reserved", "Reserved")
f.block = ProtoField.bytes("metaroce.ack_block", "ACK block")
f.block_path = ProtoField.uint8("metaroce.ack_block.path_id", "Path", base.DEC)
f.block_flags = ProtoField.uint8("metaroce.ack_block.flags", "Flags", base.HEX)
f.block_ece = ProtoField.bool("metaroce.ack_block.ece", "ECE", 8, nil, 0x01)
f.block_ecn_count = ProtoField.uint16("metaroce.ack_block.ecn_count", "CE-marked packets", base.DEC)
f.block_cum_seq = ProtoField.uint32("metaroce.ack_block.cum_seq", "Next expected path_seq", base.DEC)
f.block_echo_ts = ProtoField.uint32("metaroce.ack_block.echo_ts", "Echoed timestamp", base.DEC)
f.block_sack = ProtoField.bytes("metaroce.ack_block.sack", "SACK bitmap")
f.sack_received = ProtoField.string("metaroce.ack_block.received", "Received after cum_seq")
f.sack_missing = ProtoField.string("metaroce.ack_block.missing", "Missing (holes)")
f.nak_code = ProtoField.uint8("metaroce.nak.code", "NAK code", base.HEX, NAK_CODES)
f.nak_stream = ProtoField.uint16("metaroce.nak.stream_id", "Refused stream", base.DEC)
f.nak_msg_seq = ProtoField.uint32("metaroce.nak.msg_seq", "Refused message", base.DEC)
f.nak_msg_offset = ProtoField.uint32("metaroce.nak.msg_offset", "Refused packet's offset", base.DEC)
f.payload = ProtoField.bytes("metaroce.payload", "Payload")
f.crc = ProtoField.uint32("metaroce.crc", "CRC32C", base.HEX)
f.crc_status = ProtoField.string("metaroce.crc.status", "CRC32C status")

local e = metaroce.experts
e.too_short = ProtoExpert.new("metaroce.too_short", "Too short for its header (kTooShort)", expert.group.MALFORMED, expert.severity.ERROR)
e.bad_version = ProtoExpert.new("metaroce.bad_version", "Version byte is not 0x10 (kBadVersion)", expert.group.MALFORMED, expert.severity.ERROR)
e.bad_opcode = ProtoExpert.new("metaroce.bad_opcode", "Unassigned opcode (kBadOpcode)", expert.group.MALFORMED, expert.severity.ERROR)
e.bad_length = ProtoExpert.new("metaroce.bad_length", "Length disagrees with the datagram (kBadLength)", expert.group.MALFORMED, expert.severity.ERROR)
e.bad_crc = ProtoExpert.new("metaroce.bad_crc", "CRC32C does not match (kBadChecksum)", expert.group.CHECKSUM, expert.severity.ERROR)
e.bad_field = ProtoExpert.new("metaroce.bad_field", "Field out of range (kBadField)", expert.group.MALFORMED, expert.severity.ERROR)
e.unknown_nak = ProtoExpert.new("metaroce.unknown_nak", "Unknown NAK code (senders treat it as INVALID_REQUEST)", expert.group.PROTOCOL, expert.severity.WARN)
e.retx = ProtoExpert.new("metaroce.retx", "Retransmission", expert.group.SEQUENCE, expert.severity.NOTE)

local port_pref = 4794
metaroce.prefs.udp_port = Pref.uint("UDP port", port_pref, "UDP destination port of MetaRoCE (default 4794)")

-- CRC32C (Castagnoli, reflected 0x82F63B78, init/final 0xFFFFFFFF), table-driven.
local crc_table = {}
for i = 0, 255 do
  local c = i
  for _ = 1, 8 do
    if bit32.band(c, 1) == 1 then c = bit32.bxor(bit32.rshift(c, 1), 0x82F63B78) else c = bit32.rshift(c, 1) end
  end
  crc_table[i] = c
end
local function crc32c(s)
  local c = 0xFFFFFFFF
  for i = 1, #s do
    c = bit32.bxor(crc_table[bit32.band(bit32.bxor(c, s:byte(i)), 0xFF)], bit32.rshift(c, 8))
  end
  return bit32.bxor(c, 0xFFFFFFFF)
end

-- "a-b, c" from a sorted list of sequence numbers (mod 2^32).
local function ranges(list)
  if #list == 0 then return "none" end
  local out, first, prev = {}, list[1], list[1]
  local function flush()
    out[#out + 1] = (first == prev) and tostring(first) or (first .. "-" .. prev)
  end
  for i = 2, #list do
    local v = list[i]
    if v == (prev + 1) % 4294967296 then prev = v else flush(); first, prev = v, v end
  end
  flush()
  return table.concat(out, ", ")
end

local function flag_text(flags)
  local t = {}
  if bit32.band(flags, 0x01) ~= 0 then t[#t + 1] = "ACK_REQ" end
  if bit32.band(flags, 0x02) ~= 0 then t[#t + 1] = "FIRST" end
  if bit32.band(flags, 0x04) ~= 0 then t[#t + 1] = "LAST" end
  if bit32.band(flags, 0x08) ~= 0 then t[#t + 1] = "RETX" end
  return table.concat(t, ",")
end

local function dissect_ack_block(buf, off, tree)
  local b = tree:add(f.block, buf(off, BLOCK_BYTES))
  local path, cum = buf(off, 1):uint(), buf(off + 4, 4):uint()
  b:add(f.block_path, buf(off, 1))
  local fl = b:add(f.block_flags, buf(off + 1, 1))
  fl:add(f.block_ece, buf(off + 1, 1))
  b:add(f.block_ecn_count, buf(off + 2, 2))
  b:add(f.block_cum_seq, buf(off + 4, 4))
  b:add(f.block_echo_ts, buf(off + 8, 4))
  local sack = buf(off + 12, 32)
  b:add(f.block_sack, sack)
  -- Bit i (byte i/8, least significant bit first) set: path_seq cum + 1 + i received.
  local got, holes, highest = {}, {}, -1
  for i = 0, SACK_BITS - 1 do
    if bit32.band(sack(math.floor(i / 8), 1):uint(), bit32.lshift(1, i % 8)) ~= 0 then highest = i end
  end
  for i = 0, highest do
    local seq = (cum + 1 + i) % 4294967296
    if bit32.band(sack(math.floor(i / 8), 1):uint(), bit32.lshift(1, i % 8)) ~= 0 then got[#got + 1] = seq end
  end
  -- cum_seq itself is missing whenever anything after it was received.
  if highest >= 0 then holes[1] = cum end
  for i = 0, highest do
    local seq = (cum + 1 + i) % 4294967296
    if bit32.band(sack(math.floor(i / 8), 1):uint(), bit32.lshift(1, i % 8)) == 0 then holes[#holes + 1] = seq end
  end
  b:add(f.sack_received, sack, ranges(got))
  b:add(f.sack_missing, sack, ranges(holes))
  b:set_text(string.format("ACK block: path %d, next expected %d, received after it: %s", path, cum, ranges(got)))
  return path, cum
end

function metaroce.dissector(buf, pinfo, tree)
  local n = buf:len()
  pinfo.cols.protocol = "MetaRoCE"
  local t = tree:add(metaroce, buf(0, n))
  -- Spec section 10, in order; each failure is flagged and decoding stops
  -- where the rest would be read from the wrong place.
  if n < COMMON_BYTES + CRC_BYTES then
    t:add_proto_expert_info(e.too_short, string.format("Too short: %d bytes, a packet has at least %d (kTooShort)", n, COMMON_BYTES + CRC_BYTES))
    pinfo.cols.info = "MetaRoCE [malformed: too short]"
    return n
  end
  local ver = buf(0, 1):uint()
  local vt = t:add(f.version, buf(0, 1))
  t:add(f.version_reserved, buf(0, 1))
  local op = buf(1, 1):uint()
  t:add(f.opcode, buf(1, 1))
  local flags = buf(2, 1):uint()
  local ft = t:add(f.flags, buf(2, 1))
  if flags ~= 0 then ft:append_text(" (" .. flag_text(flags) .. ")") end
  ft:add(f.flag_ack_req, buf(2, 1))
  ft:add(f.flag_first, buf(2, 1))
  ft:add(f.flag_last, buf(2, 1))
  ft:add(f.flag_retx, buf(2, 1))
  ft:add(f.flag_reserved, buf(2, 1))
  t:add(f.path_id, buf(3, 1))
  local dst = buf(4, 4):uint()
  local dt = t:add(f.dst_conn_id, buf(4, 4))
  t:add(f.src_conn_id, buf(8, 4))
  t:add(f.stream_id, buf(12, 2))
  local plen = buf(14, 2):uint()
  local pt = t:add(f.payload_len, buf(14, 2))
  local seq = buf(16, 4):uint()
  t:add(f.path_seq, buf(16, 4))
  t:add(f.path_floor, buf(20, 4))
  if op == 0x10 then t:add(f.watermark, buf(24, 4)) else t:add(f.msg_seq, buf(24, 4)) end
  local moff, mlen = buf(28, 4):uint(), buf(32, 4):uint()
  local mt = t:add(f.msg_offset, buf(28, 4))
  t:add(f.msg_len, buf(32, 4))
  t:add(f.tx_ts, buf(36, 4))

  local name = OPCODES[op] or string.format("opcode 0x%02x", op)
  local info = string.format("%s conn 0x%x", name, dst)
  local malformed = nil
  if ver ~= 0x10 then
    vt:add_proto_expert_info(e.bad_version, string.format("Version byte 0x%02x, v1 requires exactly 0x10 (kBadVersion)", ver))
    pinfo.cols.info = info .. " [malformed: version]"
    return n
  end
  if not OPCODES[op] then
    t:add_proto_expert_info(e.bad_opcode, string.format("Opcode 0x%02x is unassigned in v1 (kBadOpcode)", op))
    pinfo.cols.info = info .. " [malformed: opcode]"
    return n
  end
  local ext = EXT_LEN[op]
  if n < COMMON_BYTES + ext + CRC_BYTES then
    t:add_proto_expert_info(e.too_short, string.format("%d bytes cannot hold the %s extension header (kTooShort)", n, name))
    pinfo.cols.info = info .. " [malformed: too short]"
    return n
  end
  local blocks = 0
  if op == 0x10 then
    blocks = buf(44, 1):uint()
    if blocks < 1 or blocks > MAX_BLOCKS then
      t:add(f.rate_hint, buf(40, 4))
      t:add(f.num_blocks, buf(44, 1)):add_proto_expert_info(e.bad_field, string.format("%d ACK blocks, allowed 1 to %d (kBadField)", blocks, MAX_BLOCKS))
      pinfo.cols.info = info .. " [malformed: block count]"
      return n
    end
  end
  local want = COMMON_BYTES + ext + BLOCK_BYTES * blocks + plen + CRC_BYTES
  if n ~= want then
    pt:add_proto_expert_info(e.bad_length, string.format("Datagram is %d bytes, the header says %d (40 + %d + %d x 44 + payload %d + 4) (kBadLength)", n, want, ext, blocks, plen))
    pinfo.cols.info = info .. " [malformed: length]"
    return n
  end

  -- Extension header.
  local o = COMMON_BYTES
  if op == 0x01 or op == 0x02 then
    t:add(f.remote_addr, buf(o, 8)); t:add(f.rkey, buf(o + 8, 4)); t:add(f.imm, buf(o + 12, 4))
  elseif op == 0x03 or op == 0x04 then
    t:add(f.recv_seq, buf(o, 4)); t:add(f.imm, buf(o + 4, 4))
  elseif op == 0x05 then
    t:add(f.remote_addr, buf(o, 8)); t:add(f.rkey, buf(o + 8, 4))
    local lt = t:add(f.read_length, buf(o + 12, 4))
    if buf(o + 12, 4):uint() == 0 then
      lt:add_proto_expert_info(e.bad_field, "READ_REQ length 0: reads are 1 byte up to the maximum message size (kBadField)")
      malformed = "read length"
    end
  elseif op == 0x07 or op == 0x08 then
    t:add(f.remote_addr, buf(o, 8)); t:add(f.rkey, buf(o + 8, 4)); t:add(f.atomic_reserved, buf(o + 12, 4))
    t:add(f.operand, buf(o + 16, 8)); t:add(f.compare, buf(o + 24, 8))
  elseif op == 0x09 then
    t:add(f.original, buf(o, 8))
  elseif op == 0x10 then
    t:add(f.rate_hint, buf(o, 4)); t:add(f.num_blocks, buf(o + 4, 1)); t:add(f.reserved, buf(o + 5, 3))
    local parts = {}
    for i = 0, blocks - 1 do
      local path, cum = dissect_ack_block(buf, o + ext + i * BLOCK_BYTES, t)
      parts[#parts + 1] = string.format("path %d cum %d", path, cum)
    end
    info = string.format("%s conn 0x%x watermark %d: %s", name, dst, buf(24, 4):uint(), table.concat(parts, "; "))
  elseif op == 0x11 then
    local code = buf(o, 1):uint()
    local ct = t:add(f.nak_code, buf(o, 1))
    if not NAK_CODES[code] then ct:add_proto_expert_info(e.unknown_nak) end
    t:add(f.reserved, buf(o + 1, 1)); t:add(f.nak_stream, buf(o + 2, 2))
    t:add(f.nak_msg_seq, buf(o + 4, 4)); t:add(f.nak_msg_offset, buf(o + 8, 4))
    info = string.format("%s %s conn 0x%x stream %d msg %d", name, NAK_CODES[code] or string.format("code 0x%02x", code),
                         dst, buf(o + 2, 2):uint(), buf(o + 4, 4):uint())
  end
  local payload_at = COMMON_BYTES + ext + BLOCK_BYTES * blocks
  if plen > 0 then t:add(f.payload, buf(payload_at, plen)) end

  -- CRC32C over every byte before the trailer, stored big-endian.
  local stored = buf(n - CRC_BYTES, CRC_BYTES):uint()
  local computed = crc32c(buf:raw(0, n - CRC_BYTES))
  local crct = t:add(f.crc, buf(n - CRC_BYTES, CRC_BYTES))
  if stored == computed then
    t:add(f.crc_status, buf(n - CRC_BYTES, CRC_BYTES), "Good")
  else
    t:add(f.crc_status, buf(n - CRC_BYTES, CRC_BYTES), "Bad")
    crct:add_proto_expert_info(e.bad_crc, string.format("CRC32C 0x%08x, computed 0x%08x (kBadChecksum)", stored, computed))
    malformed = malformed or "CRC32C"
  end
  -- Field checks (spec section 10, steps 8 to 11).
  if bit32.band(flags, 0xF0) ~= 0 then
    ft:add_proto_expert_info(e.bad_field, string.format("Reserved flag bits set (0x%02x) (kBadField)", bit32.band(flags, 0xF0)))
    malformed = malformed or "flags"
  end
  if plen ~= 0 and not HAS_PAYLOAD[op] then
    pt:add_proto_expert_info(e.bad_length, string.format("%s carries no payload, payload_len is %d (kBadLength)", name, plen))
    malformed = malformed or "payload on " .. name
  end
  if HAS_PAYLOAD[op] and moff + plen > mlen then
    mt:add_proto_expert_info(e.bad_field, string.format("msg_offset %d + payload_len %d > msg_len %d (kBadField)", moff, plen, mlen))
    malformed = malformed or "offset past the message"
  end
  if op ~= 0x10 and op ~= 0x11 and op ~= 0x0A and dst == 0 then
    dt:add_proto_expert_info(e.bad_field, "Data packet with dst_conn_id 0 (kBadField)")
    malformed = malformed or "dst_conn_id 0"
  end
  if bit32.band(flags, 0x08) ~= 0 then ft:add_proto_expert_info(e.retx) end

  if op ~= 0x10 and op ~= 0x11 then
    info = string.format("%s conn 0x%x path %d seq %d stream %d msg %d", name, dst, buf(3, 1):uint(), seq,
                         buf(12, 2):uint(), buf(24, 4):uint())
    if HAS_PAYLOAD[op] then info = info .. string.format(" off %d len %d/%d", moff, plen, mlen) end
    if flags ~= 0 then info = info .. " [" .. flag_text(flags) .. "]" end
  end
  if malformed then info = info .. " [malformed: " .. malformed .. "]" end
  pinfo.cols.info = info
  t:append_text(", " .. name)
  return n
end

local udp_table = DissectorTable.get("udp.port")
local registered = port_pref
udp_table:add(registered, metaroce)
function metaroce.prefs_changed()
  if metaroce.prefs.udp_port ~= registered then
    udp_table:remove(registered, metaroce)
    registered = metaroce.prefs.udp_port
    udp_table:add(registered, metaroce)
  end
end
