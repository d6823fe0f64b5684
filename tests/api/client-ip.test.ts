import { describe, expect, it } from "vitest";
import { addressLimitKey, clientAddress, normalizeAddress, type ClientAddressOptions } from "@/lib/client-ip";

const PEER = "x-ocr-peer-test";
const selfHosted = (trustedHops = 0): ClientAddressOptions => ({ trustedHops, onVercel: false, peerHeader: PEER });
const headers = (values: Record<string, string>) => new Headers(values);

describe("the trusted client address", () => {
  it("self-hosted with no proxy (0 hops): the socket's address, whatever X-Forwarded-For claims", () => {
    const forged = headers({ "x-forwarded-for": "1.2.3.4, 5.6.7.8", [PEER]: "203.0.113.9" });
    expect(clientAddress(forged, selfHosted())).toBe("203.0.113.9");
    expect(clientAddress(headers({ [PEER]: "::ffff:203.0.113.9" }), selfHosted())).toBe("203.0.113.9");
  });

  it("behind N trusted proxies: the N-th X-Forwarded-For entry from the right; entries the client wrote are skipped", () => {
    // client wrote "6.6.6.6"; proxy 1 appended the client's real address 198.51.100.4; the socket is proxy 1.
    const oneProxy = headers({ "x-forwarded-for": "6.6.6.6, 198.51.100.4", [PEER]: "10.0.0.2" });
    expect(clientAddress(oneProxy, selfHosted(1))).toBe("198.51.100.4");
    const twoProxies = headers({ "x-forwarded-for": "6.6.6.6, 198.51.100.4, 10.0.0.1", [PEER]: "10.0.0.2" });
    expect(clientAddress(twoProxies, selfHosted(2))).toBe("198.51.100.4");
    // A shorter chain than the hops configured (a request that bypassed the proxy): its leftmost entry.
    expect(clientAddress(headers({ [PEER]: "198.51.100.5" }), selfHosted(2))).toBe("198.51.100.5");
  });

  it("a forged socket header is only trusted under its random name, which the server sets", () => {
    const forged = headers({ "x-ocr-peer-guess": "1.1.1.1", "x-forwarded-for": "198.51.100.1" });
    expect(clientAddress(forged, selfHosted())).toBe("198.51.100.1");
  });

  it("without the socket header (next start / next dev directly): the rightmost X-Forwarded-For entry", () => {
    const options: ClientAddressOptions = { trustedHops: 0, onVercel: false };
    expect(clientAddress(headers({ "x-forwarded-for": "1.2.3.4, 127.0.0.1" }), options)).toBe("127.0.0.1");
    expect(clientAddress(headers({}), options)).toBeUndefined();
  });

  it("on Vercel: the platform's x-real-ip, never the client's first X-Forwarded-For entry", () => {
    const onVercel: ClientAddressOptions = { trustedHops: 0, onVercel: true };
    expect(clientAddress(headers({ "x-real-ip": "198.51.100.8", "x-forwarded-for": "198.51.100.8" }), onVercel)).toBe(
      "198.51.100.8",
    );
    expect(clientAddress(headers({ "x-vercel-forwarded-for": "198.51.100.9" }), onVercel)).toBe("198.51.100.9");
  });

  it("normalizes what headers carry and refuses what is not an address", () => {
    expect(normalizeAddress("198.51.100.1:5123")).toBe("198.51.100.1");
    expect(normalizeAddress("[2001:DB8::1]:443")).toBe("2001:db8::1");
    expect(normalizeAddress("::FFFF:198.51.100.1")).toBe("198.51.100.1");
    expect(normalizeAddress("unknown")).toBeUndefined();
    expect(normalizeAddress("<script>")).toBeUndefined();
    expect(normalizeAddress("")).toBeUndefined();
    expect(clientAddress(headers({ [PEER]: "not an address" }), selfHosted())).toBeUndefined();
  });

  it("limits count an IPv4 address alone and an IPv6 address by its /64", () => {
    expect(addressLimitKey("198.51.100.1")).toBe("198.51.100.1");
    expect(addressLimitKey("2001:db8:1:2:aaaa:bbbb:cccc:dddd")).toBe("2001:db8:1:2::/64");
    expect(addressLimitKey("2001:db8:1:2::9")).toBe("2001:db8:1:2::/64");
    expect(addressLimitKey("2001:db8::9")).toBe("2001:db8::/64");
    expect(addressLimitKey("::1")).toBe("::/64");
    // Every spelling of one /64 counts as one: leading zeros, a dotted tail, a zone.
    expect(addressLimitKey("2001:0db8:0001:0002:0000:0000:0000:0001")).toBe("2001:db8:1:2::/64");
    expect(addressLimitKey("2001:db8:1:2::192.0.2.1")).toBe("2001:db8:1:2::/64");
    expect(addressLimitKey("fe80::1%eth0")).toBe("fe80::/64");
    expect(addressLimitKey(undefined)).toBe("unknown");
  });
});
