import ipaddr from 'ipaddr.js';

/**
 * Which addresses an outbound request (an event delivery, a rotation notice) may connect to: only
 * public unicast. Everything inward — loopback, private, shared (CGNAT), link-local (the cloud
 * metadata address among them), unique-local, multicast, unspecified, broadcast, reserved, and the
 * IPv6 forms that carry an inward IPv4 inside (mapped, compatible, NAT64, 6to4) — is refused unless
 * the operator allow-listed the host. The ranges come from ipaddr.js, not from hand-written parsing.
 */
export const AddressClass = {
  public: 'public',
  loopback: 'loopback',
  private: 'private',
  linkLocal: 'link-local',
  uniqueLocal: 'unique-local',
  multicast: 'multicast',
  unspecified: 'unspecified',
  broadcast: 'broadcast',
  reserved: 'reserved',
  metadata: 'metadata',
  invalid: 'invalid',
} as const;
export type AddressClass = (typeof AddressClass)[keyof typeof AddressClass];

/**
 * Cloud instance metadata endpoints outside the inward ranges (or worth naming): AWS (IPv4 and
 * IPv6, and the ECS task endpoint), Azure's wire server, Alibaba, Oracle. GCP and most others use
 * 169.254.169.254, which is link-local anyway.
 */
const METADATA_ADDRESSES = new Set(
  ['169.254.169.254', '169.254.170.2', 'fd00:ec2::254', '168.63.129.16', '100.100.100.200', '192.0.0.192'].map((a) =>
    ipaddr.parse(a).toNormalizedString(),
  ),
);

const IPV4_RANGES: Readonly<Record<string, AddressClass>> = {
  unicast: AddressClass.public,
  loopback: AddressClass.loopback,
  private: AddressClass.private,
  carrierGradeNat: AddressClass.private,
  linkLocal: AddressClass.linkLocal,
  multicast: AddressClass.multicast,
  unspecified: AddressClass.unspecified,
  broadcast: AddressClass.broadcast,
};

const IPV6_RANGES: Readonly<Record<string, AddressClass>> = {
  unicast: AddressClass.public,
  loopback: AddressClass.loopback,
  linkLocal: AddressClass.linkLocal,
  deprecatedSiteLocal: AddressClass.private,
  uniqueLocal: AddressClass.uniqueLocal,
  multicast: AddressClass.multicast,
  unspecified: AddressClass.unspecified,
};

/** The address class of an IP literal (no brackets, no zone): `public` is the only one that may be reached. */
export function classifyAddress(literal: string): AddressClass {
  const text = literal.startsWith('[') && literal.endsWith(']') ? literal.slice(1, -1) : literal;
  // A zone (fe80::1%eth0) only ever goes with a link-local address; refuse it whatever ipaddr.js makes of it.
  if (text.includes('%')) return AddressClass.linkLocal;
  // Strict forms only: ipaddr.parse would also take 0x7f.1 or 2130706433, which a resolver never returns.
  if (!ipaddr.IPv4.isValidFourPartDecimal(text) && !ipaddr.IPv6.isValid(text)) return AddressClass.invalid;
  const address = ipaddr.parse(text);
  if (METADATA_ADDRESSES.has(address.toNormalizedString())) return AddressClass.metadata;
  if (address.kind() === 'ipv4') return IPV4_RANGES[address.range()] ?? AddressClass.reserved;
  const v6 = address as ipaddr.IPv6;
  const embedded = embeddedIPv4(v6);
  if (embedded) {
    const inner = classifyAddress(embedded.toString());
    // An address that only wraps an IPv4 is as inward as that IPv4; a public one inside stays public.
    return inner === AddressClass.public ? AddressClass.public : inner;
  }
  return IPV6_RANGES[v6.range()] ?? AddressClass.reserved;
}

/** True for every class but `public`. */
export function isInward(literal: string): boolean {
  return classifyAddress(literal) !== AddressClass.public;
}

/**
 * The IPv4 inside an IPv6 transition form: mapped (::ffff:a.b.c.d), translated (::ffff:0:a.b.c.d),
 * compatible (::a.b.c.d, deprecated), NAT64 (64:ff9b::/96 and the local-use 64:ff9b:1::/48) and 6to4
 * (2002:AABB:CCDD::). Teredo hides its client address; it is refused as reserved instead.
 */
function embeddedIPv4(address: ipaddr.IPv6): ipaddr.IPv4 | undefined {
  const p = address.parts;
  const last32 = () => new ipaddr.IPv4([p[6]! >> 8, p[6]! & 0xff, p[7]! >> 8, p[7]! & 0xff]);
  switch (address.range()) {
    case 'ipv4Mapped':
    case 'rfc6145':
    case 'rfc6052':
      return last32();
    case '6to4':
      return new ipaddr.IPv4([p[1]! >> 8, p[1]! & 0xff, p[2]! >> 8, p[2]! & 0xff]);
    default:
      break;
  }
  // ::a.b.c.d (IPv4-compatible, deprecated): the first 96 bits zero, and not :: or ::1 themselves.
  if (p.slice(0, 6).every((part) => part === 0) && (p[6] !== 0 || p[7]! > 1)) return last32();
  return undefined;
}
