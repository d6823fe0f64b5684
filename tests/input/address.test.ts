import { describe, expect, it } from "vitest";
import { formatIPv6, isLocalhostName, isPublicAddress, parseHostLiteral, parseIPv6 } from "@/lib/input";

/** Every denied IPv4 range: [range, first address, last address, the public neighbours just outside it]. */
const DENIED_V4: Array<[range: string, first: string, last: string, outside: string[]]> = [
  ["0.0.0.0/8", "0.0.0.0", "0.255.255.255", ["1.0.0.0"]],
  ["10.0.0.0/8", "10.0.0.0", "10.255.255.255", ["9.255.255.255", "11.0.0.0"]],
  ["100.64.0.0/10", "100.64.0.0", "100.127.255.255", ["100.63.255.255", "100.128.0.0"]],
  ["127.0.0.0/8", "127.0.0.0", "127.255.255.255", ["126.255.255.255", "128.0.0.0"]],
  ["169.254.0.0/16", "169.254.0.0", "169.254.255.255", ["169.253.255.255", "169.255.0.0"]],
  ["172.16.0.0/12", "172.16.0.0", "172.31.255.255", ["172.15.255.255", "172.32.0.0"]],
  ["192.0.0.0/24", "192.0.0.0", "192.0.0.255", ["191.255.255.255", "192.0.1.0"]],
  ["192.0.2.0/24", "192.0.2.0", "192.0.2.255", ["192.0.1.255", "192.0.3.0"]],
  ["192.168.0.0/16", "192.168.0.0", "192.168.255.255", ["192.167.255.255", "192.169.0.0"]],
  ["198.18.0.0/15", "198.18.0.0", "198.19.255.255", ["198.17.255.255", "198.20.0.0"]],
  ["198.51.100.0/24", "198.51.100.0", "198.51.100.255", ["198.51.99.255", "198.51.101.0"]],
  ["203.0.113.0/24", "203.0.113.0", "203.0.113.255", ["203.0.112.255", "203.0.114.0"]],
  ["224.0.0.0/4 multicast", "224.0.0.0", "239.255.255.255", ["223.255.255.255"]],
  ["240.0.0.0/4 reserved", "240.0.0.0", "255.255.255.254", []],
  ["255.255.255.255 broadcast", "255.255.255.255", "255.255.255.255", []],
];

const DENIED_V6: Array<[range: string, first: string, last: string, outside: string[]]> = [
  ["::/128 unspecified", "::", "::", []],
  ["::1/128 loopback", "::1", "::1", []],
  ["fc00::/7 unique local", "fc00::", "fdff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", []],
  ["fe80::/10 link-local", "fe80::", "febf:ffff:ffff:ffff:ffff:ffff:ffff:ffff", []],
  ["ff00::/8 multicast", "ff00::", "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", []],
  [
    "2001:db8::/32 documentation",
    "2001:db8::",
    "2001:db8:ffff:ffff:ffff:ffff:ffff:ffff",
    ["2001:db7:ffff::1", "2001:db9::"],
  ],
  ["2001::/23 IETF protocol assignments (Teredo…)", "2001::", "2001:1ff:ffff:ffff:ffff:ffff:ffff:ffff", ["2001:200::"]],
  ["3fff::/20 documentation", "3fff::", "3fff:fff:ffff:ffff:ffff:ffff:ffff:ffff", ["3ffe:ffff::1", "3fff:1000::"]],
  ["IPv4-compatible ::a.b.c.d", "::0.0.0.2", "::255.255.255.255", []],
  [
    "IPv4-mapped of 127/8 (dotted)",
    "::ffff:127.0.0.0",
    "::ffff:127.255.255.255",
    ["::ffff:126.255.255.255", "::ffff:128.0.0.0"],
  ],
  ["IPv4-mapped of 127/8 (hex)", "::ffff:7f00:0", "::ffff:7fff:ffff", ["::ffff:7eff:ffff", "::ffff:8000:0"]],
  ["IPv4-mapped of 10/8", "::ffff:10.0.0.0", "::ffff:aff:ffff", ["::ffff:9.255.255.255", "::ffff:b00:0"]],
  ["IPv4-mapped of 169.254/16", "::ffff:169.254.0.0", "::ffff:a9fe:ffff", ["::ffff:169.255.0.0"]],
  ["IPv4-mapped of 0.0.0.0", "::ffff:0.0.0.0", "::ffff:0:0", ["::ffff:1.0.0.0"]],
  [
    "NAT64 64:ff9b::/96 of 10/8",
    "64:ff9b::10.0.0.0",
    "64:ff9b::aff:ffff",
    ["64:ff9b::9.255.255.255", "64:ff9b::b00:0"],
  ],
  ["NAT64 64:ff9b::/96 of 127/8", "64:ff9b::7f00:1", "64:ff9b::127.255.255.255", ["64:ff9b::128.0.0.0"]],
  ["NAT64 64:ff9b::/96 of 192.168/16", "64:ff9b::192.168.0.0", "64:ff9b::c0a8:ffff", ["64:ff9b::192.169.0.0"]],
  ["local-use NAT64 64:ff9b:1::/48", "64:ff9b:1::", "64:ff9b:1:ffff:ffff:ffff:ffff:ffff", []],
  [
    "6to4 2002::/16 of 10/8",
    "2002:a00::",
    "2002:aff:ffff:ffff:ffff:ffff:ffff:ffff",
    ["2002:9ff:ffff::1", "2002:b00::1"],
  ],
  ["6to4 2002::/16 of 127/8", "2002:7f00:1::", "2002:7fff:ffff::1", ["2002:8000::1"]],
  ["6to4 2002::/16 of 192.168/16", "2002:c0a8::", "2002:c0a8:ffff:ffff:ffff:ffff:ffff:ffff", ["2002:c0a9::1"]],
  ["discard 100::/64", "100::", "100::ffff:ffff:ffff:ffff", []],
  ["site-local fec0::/10 (deprecated)", "fec0::", "feff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", []],
];

const PUBLIC = [
  "8.8.8.8",
  "1.1.1.1",
  "93.184.216.34",
  "9.9.9.9",
  "2606:4700::1111",
  "2606:4700:4700::1111",
  "2001:4860:4860::8888",
  "2a00:1450:4001:82b::200e",
  "::ffff:8.8.8.8", // IPv4-mapped of a public address reaches that public address
  "::ffff:808:808",
  "64:ff9b::8.8.8.8", // NAT64 of a public address
  "2002:808:808::1", // 6to4 of 8.8.8.8
];

describe("isPublicAddress", () => {
  describe.each(DENIED_V4)("IPv4 %s", (_range, first, last, outside) => {
    it(`denies the first address ${first}`, () => expect(isPublicAddress(first)).toBe(false));
    it(`denies the last address ${last}`, () => expect(isPublicAddress(last)).toBe(false));
    it.each(outside)("allows the neighbour %s", (address) => expect(isPublicAddress(address)).toBe(true));
    it(`denies ${first} in its IPv4-mapped IPv6 form`, () => expect(isPublicAddress(`::ffff:${first}`)).toBe(false));
  });

  describe.each(DENIED_V6)("IPv6 %s", (_range, first, last, outside) => {
    it(`denies the first address ${first}`, () => expect(isPublicAddress(first)).toBe(false));
    it(`denies the last address ${last}`, () => expect(isPublicAddress(last)).toBe(false));
    it.each(outside)("allows the neighbour %s", (address) => expect(isPublicAddress(address)).toBe(true));
  });

  it.each(PUBLIC)("allows public %s", (address) => expect(isPublicAddress(address)).toBe(true));

  it.each([
    ["a name", "example.com"],
    ["empty", ""],
    ["garbage", "not an address"],
    ["an IPv4 with five parts", "1.2.3.4.5"],
    ["an out-of-range octet", "256.0.0.1"],
    ["bad IPv6", "2606:4700:::1"],
  ])("fails closed on %s", (_name, text) => expect(isPublicAddress(text)).toBe(false));

  it.each([
    ["bracketed", "[::1]", false],
    ["with a zone", "fe80::1%eth0", false],
    ["bracketed with an encoded zone", "[fe80::1%25eth0]", false],
    ["upper-case hex", "FE80::1", false],
    ["fully expanded", "0000:0000:0000:0000:0000:0000:0000:0001", false],
    ["decimal IPv4", "2130706433", false],
    ["bracketed public", "[2606:4700::1111]", true],
  ])("reads any literal form: %s", (_name, text, expected) => expect(isPublicAddress(text)).toBe(expected));
});

describe("parseHostLiteral", () => {
  // Raw host text as it may appear in a URL or reach a lenient resolver.
  it.each([
    ["127.0.0.1", "127.0.0.1", 4],
    ["127.0.0.1.", "127.0.0.1", 4],
    ["2130706433", "127.0.0.1", 4],
    ["0177.0.0.1", "127.0.0.1", 4],
    ["0x7f.1", "127.0.0.1", 4],
    ["0x7F000001", "127.0.0.1", 4],
    ["0x7f.0.0.0x1", "127.0.0.1", 4],
    ["127.1", "127.0.0.1", 4],
    ["127.0.1", "127.0.0.1", 4],
    ["10.0x10000", "10.1.0.0", 4],
    ["0", "0.0.0.0", 4],
    ["0x", "0.0.0.0", 4],
    ["017700000001", "127.0.0.1", 4],
    ["%31%32%37.0.0.1", "127.0.0.1", 4],
    ["4294967295", "255.255.255.255", 4],
    ["[::ffff:127.0.0.1]", "::ffff:7f00:1", 6],
    ["::ffff:127.0.0.1", "::ffff:7f00:1", 6],
    ["[::1]", "::1", 6],
    ["[fe80::1%25eth0]", "fe80::1", 6],
    ["fe80::1%eth0", "fe80::1", 6],
    ["[2606:4700:0:0:0:0:0:1111]", "2606:4700::1111", 6],
    ["[::]", "::", 6],
    ["[1:0:0:1:0:0:0:1]", "1:0:0:1::1", 6],
    ["[1:0:0:2:0:0:3:4]", "1::2:0:0:3:4", 6],
  ] as const)("%s → %s", (host, address, family) => {
    expect(parseHostLiteral(host)).toEqual({ address, family });
    expect(isPublicAddress(host)).toBe(isPublicAddress(address));
  });

  it.each([
    "example.com",
    "localhost",
    "1.2.3.4.5",
    "256.256.256.256",
    "4294967296",
    "0x1.0x2.0x3.0x100",
    "08.0.0.1",
    "1..2",
    "",
    "[]",
    "[example.com]",
  ])("%s is not an IP literal", (host) => expect(parseHostLiteral(host)).toBeUndefined());

  it("formats IPv6 per RFC 5952", () => {
    expect(formatIPv6(parseIPv6("2001:DB8:0:0:1:0:0:1")!)).toBe("2001:db8::1:0:0:1");
    expect(formatIPv6(parseIPv6("2001:db8:0:1:1:1:1:1")!)).toBe("2001:db8:0:1:1:1:1:1");
    expect(formatIPv6(parseIPv6("1::")!)).toBe("1::");
  });
});

describe("URL hosts", () => {
  // WHATWG `new URL()` normalizes many spellings; the guard must refuse both the normalized and the raw form.
  it.each([
    ["http://2130706433/", "127.0.0.1"],
    ["http://0177.0.0.1/", "127.0.0.1"],
    ["http://0x7f000001/", "127.0.0.1"],
    ["http://0x7f.1/", "127.0.0.1"],
    ["http://127.1/", "127.0.0.1"],
    ["http://127.0.0.1./", "127.0.0.1"],
    ["http://0/", "0.0.0.0"],
    ["http://%31%32%37.0.0.1/", "127.0.0.1"],
    ["http://[::ffff:127.0.0.1]/", "[::ffff:7f00:1]"],
    ["http://[::1]/", "[::1]"],
    ["http://[::127.0.0.1]/", "[::7f00:1]"],
    ["http://[64:ff9b::10.0.0.1]/", "[64:ff9b::a00:1]"],
  ])("%s: hostname %s is recognized and denied", (url, hostname) => {
    const parsed = new URL(url);
    expect(parsed.hostname).toBe(hostname);
    expect(parseHostLiteral(parsed.hostname)).toBeDefined();
    expect(isPublicAddress(parsed.hostname)).toBe(false);
    const raw = url.slice("http://".length, -1);
    expect(parseHostLiteral(raw)).toBeDefined();
    expect(isPublicAddress(raw)).toBe(false);
  });

  it("http://[fe80::1%25eth0]/: WHATWG URL rejects zone ids; the raw host is still recognized and denied", () => {
    expect(() => new URL("http://[fe80::1%25eth0]/")).toThrow();
    expect(parseHostLiteral("[fe80::1%25eth0]")).toEqual({ address: "fe80::1", family: 6 });
    expect(isPublicAddress("[fe80::1%25eth0]")).toBe(false);
  });

  it("http://localhost/: a name, not a literal; refused by name (RFC 6761) before DNS", () => {
    const { hostname } = new URL("http://localhost/");
    expect(parseHostLiteral(hostname)).toBeUndefined();
    expect(isLocalhostName(hostname)).toBe(true);
    expect(isLocalhostName("LOCALHOST.")).toBe(true);
    expect(isLocalhostName("api.localhost")).toBe(true);
    expect(isLocalhostName("localhost.example.com")).toBe(false);
    expect(isLocalhostName("notlocalhost")).toBe(false);
  });

  it.each(["http://8.8.8.8/", "http://[2606:4700::1111]/", "http://134744072/", "http://93.184.216.34/"])(
    "%s is a public literal",
    (url) => expect(isPublicAddress(new URL(url).hostname)).toBe(true),
  );
});
