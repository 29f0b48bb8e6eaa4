package org.tent4j.transport.tcp;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Map;
import java.util.Optional;
import java.util.ServiceLoader;
import java.util.function.Function;
import java.util.stream.Collectors;

import org.junit.jupiter.api.Test;

import org.tent4j.api.ConfigException;
import org.tent4j.api.Location;
import org.tent4j.api.MemoryKind;
import org.tent4j.api.Permission;
import org.tent4j.spi.LocalBuffer;
import org.tent4j.spi.OptionSpec;
import org.tent4j.spi.TransportCapabilities;
import org.tent4j.spi.TransportProvider;
import org.tent4j.testkit.transport.TestTransportContext;

class TcpTransportProviderTest {
    private final TcpTransportProvider provider = new TcpTransportProvider();

    @Test
    void foundThroughServiceLoader() {
        Optional<TransportProvider> tcp = ServiceLoader.load(TransportProvider.class).stream()
                .map(ServiceLoader.Provider::get).filter(p -> p.id().equals("tcp")).findFirst();
        assertTrue(tcp.isPresent());
        assertTrue(tcp.get() instanceof TcpTransportProvider);
    }

    @Test
    void declaresHostOnlyCapabilitiesAndIsAlwaysAvailable() {
        TransportCapabilities c = provider.capabilities();
        // host memory, and a peer's files through the peer's engine (remote file segments, issue 12)
        assertEquals(java.util.Set.of(org.tent4j.spi.MemoryPath.of(MemoryKind.CPU, MemoryKind.CPU),
                org.tent4j.spi.MemoryPath.of(MemoryKind.CPU, MemoryKind.FILE)), c.memoryPaths());
        assertTrue(c.supports(MemoryKind.CPU, MemoryKind.CPU));
        assertFalse(c.supports(MemoryKind.CPU, MemoryKind.CUDA));
        assertFalse(c.sameHostOnly());
        assertFalse(c.cancellation());
        assertEquals(64L << 20, c.maxSliceSize());
        assertEquals(100, c.rank());
        assertTrue(provider.availability().isAvailable());
        assertTrue(provider.description().contains("epoll") || provider.description().contains("nio"),
                provider.description());
    }

    @Test
    void declaresItsOptionsWithDefaults() {
        Map<String, OptionSpec> o = provider.options().stream()
                .collect(Collectors.toMap(OptionSpec::name, Function.identity()));
        assertEquals(Map.ofEntries(Map.entry("lanes", "2"), Map.entry("io_threads", "2"), Map.entry("port", "0"),
                        Map.entry("io_mode", "auto"), Map.entry("connect_timeout", "5s"), Map.entry("max_frame", "64m"),
                        Map.entry("max_connections", "1024"), Map.entry("idle_timeout", "10m"),
                        Map.entry("max_queued_bytes", "16m"), Map.entry("max_file_buffer_bytes", "256m"),
                        Map.entry("keepalive_idle", "15s"), Map.entry("keepalive_interval", "5s"),
                        Map.entry("keepalive_count", "3"), Map.entry("interfaces", ""),
                        Map.entry("rail_connect_timeout", "1s"), Map.entry("rail_recheck", "5s")),
                o.values().stream().collect(Collectors.toMap(OptionSpec::name, OptionSpec::defaultValue)));
        assertEquals(OptionSpec.Type.INT, o.get("lanes").type());
        assertEquals(OptionSpec.Type.INT, o.get("io_threads").type());
        assertEquals(OptionSpec.Type.INT, o.get("port").type());
        assertEquals(OptionSpec.Type.STRING, o.get("io_mode").type());
        assertEquals(OptionSpec.Type.DURATION, o.get("connect_timeout").type());
        assertEquals(OptionSpec.Type.SIZE, o.get("max_frame").type());
    }

    @Test
    void publishesItsPortAndServesOnlyHostMemory() throws Exception {
        try (TestTransportContext ctx = TcpFixture.context("a", Map.of());
             TcpTransport t = (TcpTransport) provider.create(ctx);
             java.net.Socket probe = new java.net.Socket("127.0.0.1", t.port())) {
            assertEquals("tcp", t.id());
            assertEquals(Integer.toString(t.port()), t.segmentAttributes().get("port"));
            assertEquals(Long.toString(64L << 20), t.segmentAttributes().get("max_frame"));
            assertTrue(probe.isConnected());
            LocalBuffer host = ctx.memory().register(java.lang.foreign.Arena.global().allocate(64), Permission.READ_WRITE);
            assertEquals(Optional.of(Map.of()), t.registerBuffer(host));
            LocalBuffer device = new DeviceBuffer(host);
            assertEquals(Optional.empty(), t.registerBuffer(device));
        }
    }

    @Test
    void rejectsBadOptionValues() {
        // a file buffer budget below max_frame could never serve a request of the largest size
        // the kernel counts keep-alive in whole seconds: a fraction is refused rather than rounded
        for (var bad : Map.of("lanes", "0", "io_threads", "0", "max_frame", "2g", "port", "70000",
                "max_file_buffer_bytes", "63m", "keepalive_idle", "1500ms", "keepalive_interval", "0s",
                "keepalive_count", "0", "rail_recheck", "0s").entrySet()) {
            try (TestTransportContext ctx = TcpFixture.context("a", Map.of(bad.getKey(), bad.getValue()))) {
                ConfigException e = assertThrows(ConfigException.class, () -> provider.create(ctx));
                assertEquals("transports.tcp." + bad.getKey(), e.key());
            }
        }
    }

    /** The same memory claimed to be on a GPU, to see the transport decline it. */
    private record DeviceBuffer(LocalBuffer host) implements LocalBuffer {
        @Override public int id() { return 99; }
        @Override public java.lang.foreign.MemorySegment segment() { return host.segment(); }
        @Override public Location location() { return Location.device(MemoryKind.CUDA, 0); }
        @Override public Permission permission() { return Permission.READ_WRITE; }
        @Override public Map<String, String> backing() { return Map.of(); }
    }
}
