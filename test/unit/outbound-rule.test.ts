import { describe, expect, it } from 'vitest';
import { DELIVERY_NOT_DELIVERED, publicDeliveryError } from '../../src/domain/delivery-errors.js';
import { classifyAddress, type AddressClass } from '../../src/domain/outbound-addresses.js';
import { outboundUrlProblem, parseAllowHosts, type AllowHosts } from '../../src/domain/outbound-rule.js';

describe('classifyAddress', () => {
  const table: Array<[string, AddressClass]> = [
    ['127.0.0.1', 'loopback'],
    ['127.255.255.254', 'loopback'],
    ['10.0.0.8', 'private'],
    ['172.16.0.1', 'private'],
    ['172.31.255.255', 'private'],
    ['192.168.1.1', 'private'],
    ['100.64.0.1', 'private'],
    ['100.127.255.255', 'private'],
    ['169.254.0.1', 'link-local'],
    ['169.254.169.254', 'metadata'],
    ['169.254.170.2', 'metadata'],
    ['168.63.129.16', 'metadata'],
    ['100.100.100.200', 'metadata'],
    ['192.0.0.192', 'metadata'],
    ['0.0.0.0', 'unspecified'],
    ['0.1.2.3', 'unspecified'],
    ['255.255.255.255', 'broadcast'],
    ['224.0.0.1', 'multicast'],
    ['239.255.255.250', 'multicast'],
    ['240.0.0.1', 'reserved'],
    ['192.0.2.10', 'reserved'],
    ['198.18.0.1', 'reserved'],
    ['::1', 'loopback'],
    ['0:0:0:0:0:0:0:1', 'loopback'],
    ['::', 'unspecified'],
    ['fe80::1', 'link-local'],
    ['fe80::1%eth0', 'link-local'],
    ['febf::1', 'link-local'],
    ['fc00::1', 'unique-local'],
    ['fd12:3456::1', 'unique-local'],
    ['fd00:ec2::254', 'metadata'],
    ['fec0::1', 'private'],
    ['ff02::1', 'multicast'],
    ['::ffff:127.0.0.1', 'loopback'],
    ['::ffff:7f00:1', 'loopback'],
    ['::ffff:a9fe:a9fe', 'metadata'],
    ['::ffff:10.0.0.1', 'private'],
    ['::ffff:0:7f00:1', 'loopback'],
    ['::127.0.0.1', 'loopback'],
    ['::a00:1', 'private'],
    ['64:ff9b::7f00:1', 'loopback'],
    ['64:ff9b::a9fe:a9fe', 'metadata'],
    ['64:ff9b:1::a00:1', 'private'],
    ['2002:7f00:1::', 'loopback'],
    ['2002:c0a8:101::1', 'private'],
    ['2001::1', 'reserved'],
    ['2001:db8::1', 'reserved'],
    ['100::1', 'reserved'],
    ['93.184.216.34', 'public'],
    ['8.8.8.8', 'public'],
    ['172.32.0.1', 'public'],
    ['::ffff:8.8.8.8', 'public'],
    ['64:ff9b::808:808', 'public'],
    ['2002:808:808::1', 'public'],
    ['2606:4700:4700::1111', 'public'],
  ];
  it.each(table)('%s is %s', (address, expected) => {
    expect(classifyAddress(address)).toBe(expected);
  });

  it('refuses what is not a plain address (a resolver never answers 0x7f.1 or 2130706433)', () => {
    for (const text of ['0x7f.1', '2130706433', '0177.0.0.1', '127.1', 'localhost', '', '1.2.3.4.5', ':::1'])
      expect(classifyAddress(text), text).toBe('invalid');
  });
});

describe('outboundUrlProblem (the rule where a URL is given)', () => {
  const none: AllowHosts = [];

  it('lets https to a public host or a name through (a name is checked again at connect)', () => {
    for (const url of [
      'https://hooks.example.com/tpo',
      'https://93.184.216.34/x',
      'https://[2606:4700:4700::1111]/x',
      'https://rebind.test:8443/x',
      'https://127.0.0.1.nip.io/x',
    ])
      expect(outboundUrlProblem(url, none), url).toBeUndefined();
  });

  it('refuses an inward literal in every spelling that reaches fetch', () => {
    const inward = [
      'https://127.0.0.1/admin',
      'https://2130706433/',
      'https://0177.0.0.1/',
      'https://0x7f.1/',
      'https://0x7f000001/',
      'https://127.1/',
      'https://127.0.1/',
      'https://%31%32%37.0.0.1/',
      'https://[::1]/',
      'https://[0:0:0:0:0:0:0:1]/',
      'https://[::ffff:7f00:1]/',
      'https://[::ffff:127.0.0.1]/',
      'https://[::127.0.0.1]/',
      'https://[64:ff9b::7f00:1]/',
      'https://[2002:7f00:1::]/',
      'https://localhost/',
      'https://localhost./',
      'https://LOCALHOST:8080/',
      'https://api.localhost/',
      'https://0.0.0.0/',
      'https://0/',
      'https://[::]/',
      'https://169.254.169.254/latest/meta-data/',
      'https://2852039166/',
      'https://[fd00:ec2::254]/',
      'https://[fe80::1]/',
      'https://10.0.0.8/',
      'https://172.16.5.4/',
      'https://192.168.0.1/',
      'https://100.64.0.1/',
      'https://224.0.0.1/',
      'https://255.255.255.255/',
    ];
    for (const url of inward)
      expect(outboundUrlProblem(url, none), url).toMatch(/^must not point at an inward address/);
  });

  it('refuses plain http unless to a loopback host the allow-list names', () => {
    const loopback = parseAllowHosts('127.0.0.1:9000,localhost,[::1]:9001').hosts;
    for (const url of ['http://example.com/x', 'http://93.184.216.34/x', 'http://10.0.0.8/x'])
      expect(outboundUrlProblem(url, loopback), url).toMatch(/^must be https/);
    for (const url of ['http://127.0.0.1/x', 'http://127.0.0.1:9001/x', 'http://[::1]:9000/x', 'http://localhost/x'])
      expect(outboundUrlProblem(url, none), url).toMatch(/^must be https/);
    expect(outboundUrlProblem('http://127.0.0.1:9001/x', loopback)).toMatch(/^must be https/);
    for (const url of [
      'http://127.0.0.1:9000/x',
      'http://2130706433:9000/x',
      'http://0x7f.1:9000/x',
      'http://localhost:1234/x',
      'http://localhost.:1234/x',
      'http://[::1]:9001/x',
      'http://[0:0:0:0:0:0:0:1]:9001/x',
    ])
      expect(outboundUrlProblem(url, loopback), url).toBeUndefined();
    // A listed private host may be reached over https, never over plain http.
    const privateHost = parseAllowHosts('10.0.0.8:8443').hosts;
    expect(outboundUrlProblem('https://10.0.0.8:8443/x', privateHost)).toBeUndefined();
    expect(outboundUrlProblem('https://10.0.0.8/x', privateHost)).toMatch(/inward/);
    expect(outboundUrlProblem('http://10.0.0.8:8443/x', privateHost)).toMatch(/^must be https/);
  });

  it('refuses what is not an https URL, with credentials, or a zone the parser rejects', () => {
    expect(outboundUrlProblem('ftp://example.com/', none)).toBe('must be an absolute https URL');
    expect(outboundUrlProblem('file:///etc/passwd', none)).toBe('must be an absolute https URL');
    expect(outboundUrlProblem('/relative', none)).toBe('must be an absolute https URL');
    expect(outboundUrlProblem('https://[fe80::1%25eth0]/', none)).toBe('must be an absolute https URL');
    expect(outboundUrlProblem('https://user:pw@example.com/', none)).toBe('must not carry credentials');
  });
});

describe('OUTBOUND_ALLOW_HOSTS', () => {
  it('parses host[:port] entries the way URLs are parsed', () => {
    expect(parseAllowHosts(' 0x7f.1:9000 , LOCALHOST., [0:0:0:0:0:0:0:1]:80,hooks.internal ').hosts).toEqual([
      { host: '127.0.0.1', port: 9000 },
      { host: 'localhost' },
      { host: '::1', port: 80 },
      { host: 'hooks.internal' },
    ]);
    expect(parseAllowHosts('http://x.example,127.0.0.1:99999,a/b,ok.example')).toEqual({
      hosts: [{ host: 'ok.example' }],
      problems: [
        expect.stringMatching(/^entry "http:\/\/x.example" is not host\[:port\]/),
        expect.stringMatching(/^entry "127.0.0.1:99999" is not host\[:port\]/),
        expect.stringMatching(/^entry "a\/b" is not host\[:port\]/),
      ],
    });
  });
});

describe('delivery errors as callers see them', () => {
  it('shows a status when the receiver answered, one generic error otherwise (older detailed rows too)', () => {
    expect(publicDeliveryError(500, 'receiver answered 500')).toBe('receiver answered 500');
    for (const old of ['request failed: TypeError', 'request failed: TimeoutError', 'request failed: AbortError'])
      expect(publicDeliveryError(null, old)).toBe(DELIVERY_NOT_DELIVERED);
    expect(publicDeliveryError(null, 'subscription deleted')).toBe('subscription deleted');
    expect(publicDeliveryError(null, null)).toBeNull();
  });
});
