package org.tent4j.transport.tcp;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.net.InetAddress;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.stream.Collectors;
import java.util.stream.IntStream;

import org.junit.jupiter.api.Test;

import org.tent4j.api.ConfigException;
import org.tent4j.api.ErrorCode;
import org.tent4j.api.TransferException;
import org.tent4j.spi.SegmentDescriptor;

/** Multi-rail tcp: {@code transports.tcp.interfaces} parsing, and reading a peer's published addresses (old and new). */
class RailAddressesTest {

    static InetAddress ip(String text) {
        return RailAddresses.literal(text);
    }

    static SegmentDescriptor peer(String machineId, Map<String, String> tcp) {
        return SegmentDescriptor.builder().name("t").machineId(machineId).host("198.51.100.1").controlPort(0)
                .transports(List.of("tcp")).transportAttributes(Map.of("tcp", tcp)).buffers(List.of()).version(1)
                .build();
    }

    @Test
    void emptyMeansTheHostAloneAndPublishesNothingNew() {
        RailAddresses a = RailAddresses.resolve("", "127.0.0.1");
        assertFalse(a.multiRail());
        assertEquals(List.of(ip("127.0.0.1")), a.locals().stream().map(RailAddresses.Local::address).toList());
        assertNull(a.published(), "a one-address engine's descriptor stays as it was before multi-rail");
        // the kernel picks the source, as before
        assertEquals(Collections.singletonList(null), a.sourcesFor(ip("198.51.100.1")));
    }

    @Test
    void starTakesEveryUpNonLoopbackInterfaceAfterTheHost() {
        RailAddresses a = RailAddresses.resolve("*", "127.0.0.1");
        List<InetAddress> got = a.locals().stream().map(RailAddresses.Local::address).toList();
        assertEquals(ip("127.0.0.1"), got.get(0), "control.host's address comes first: peers that read only 'port' use it");
        for (InetAddress x : got.subList(1, got.size())) {
            assertFalse(x.isLoopbackAddress() || x.isLinkLocalAddress(), got.toString());
        }
        if (a.multiRail()) {
            assertEquals(got.stream().map(InetAddress::getHostAddress).collect(Collectors.joining(",")), a.published());
        }
    }

    @Test
    void badEntriesAreRefusedNamingTheEntry() {
        for (String[] c : new String[][]{
                {"no-such-if0", "'no-such-if0' is neither an interface nor an address of this machine"},
                {"203.0.113.9", "'203.0.113.9' is neither an interface nor an address of this machine"},
                {"lo", "interface 'lo' has no usable address"},
                {"127.0.0.1,,127.0.0.1", "empty entry in '127.0.0.1,,127.0.0.1'"}}) {
            ConfigException e = assertThrows(ConfigException.class, () -> RailAddresses.resolve(c[0], "127.0.0.1"), c[0]);
            assertEquals("transports.tcp.interfaces", e.key());
            assertTrue(e.getMessage().contains(c[1]), e.getMessage());
        }
    }

    @Test
    void aPeerThatPublishesOnlyItsPortIsReachedAtItsHost() {
        assertEquals(List.of(ip("198.51.100.1")), RailAddresses.remotes(peer("m", Map.of("port", "7000")), "m"));
    }

    @Test
    void publishedAddressesAreReadAndLoopbackOfAnotherMachineIsLeftOut() {
        Map<String, String> tcp = Map.of("port", "7000", "addresses", "198.51.100.1,127.0.0.1,198.51.100.17,198.51.100.1");
        assertEquals(List.of(ip("198.51.100.1"), ip("198.51.100.17")), RailAddresses.remotes(peer("other", tcp), "m"));
        assertEquals(List.of(ip("198.51.100.1"), ip("127.0.0.1"), ip("198.51.100.17")),
                RailAddresses.remotes(peer("m", tcp), "m"), "on the same machine loopback reaches the peer");
    }

    @Test
    void malformedAddressesAreRefusedNamingSegmentAndValue() {
        String many = IntStream.range(0, 17).mapToObj(i -> "198.51.100." + i).collect(Collectors.joining(","));
        for (String[] c : new String[][]{
                {"198.51.100.1,peer.example", "segment 't' publishes tcp address 'peer.example', not an IP address"},
                {"198.51.100.1,", "segment 't' publishes tcp address '', not an IP address"},
                {many, "segment 't' publishes 17 tcp addresses; at most 16"},
                {"127.0.0.1", "segment 't' publishes no tcp address reachable from another machine (127.0.0.1)"}}) {
            TransferException e = assertThrows(TransferException.class,
                    () -> RailAddresses.remotes(peer("other", Map.of("port", "1", "addresses", c[0])), "m"), c[0]);
            assertEquals(ErrorCode.TRANSPORT_UNAVAILABLE, e.code());
            assertTrue(e.getMessage().contains(c[1]), e.getMessage());
        }
    }

    @Test
    void aRemoteAddressIsTriedFromTheLocalAddressesOnItsSubnetElseFromTheKernelsChoice() {
        RailAddresses.Local l0 = new RailAddresses.Local(ip("198.51.100.2"), "l0", 28);
        RailAddresses.Local l1 = new RailAddresses.Local(ip("198.51.100.18"), "l1", 28);
        RailAddresses a = new RailAddresses(List.of(l0, l1));
        assertTrue(a.multiRail());
        assertEquals("198.51.100.2,198.51.100.18", a.published());
        assertEquals(List.of(l0), a.sourcesFor(ip("198.51.100.1")));
        assertEquals(List.of(l1), a.sourcesFor(ip("198.51.100.17")));
        // a routed peer: no subnet says which, so the kernel's routing does
        assertEquals(Collections.singletonList(null), a.sourcesFor(ip("203.0.113.5")));
        assertEquals("l1->198.51.100.17", RailAddresses.railName(l1, ip("198.51.100.17")));
        assertEquals("203.0.113.5", RailAddresses.railName(null, ip("203.0.113.5")));
    }

    @Test
    void subnetsCompareByPrefix() {
        assertTrue(RailAddresses.sameSubnet(ip("198.51.100.17").getAddress(), ip("198.51.100.30").getAddress(), 28));
        assertFalse(RailAddresses.sameSubnet(ip("198.51.100.17").getAddress(), ip("198.51.100.33").getAddress(), 28));
        assertTrue(RailAddresses.sameSubnet(ip("10.1.2.3").getAddress(), ip("10.9.9.9").getAddress(), 8));
        assertFalse(RailAddresses.sameSubnet(ip("10.1.2.3").getAddress(), ip("fd00::1").getAddress(), 8));
    }
}
