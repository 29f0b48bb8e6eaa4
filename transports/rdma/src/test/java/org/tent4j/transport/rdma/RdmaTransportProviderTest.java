package org.tent4j.transport.rdma;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.ServiceLoader;
import java.util.stream.Collectors;

import org.junit.jupiter.api.Test;
import org.tent4j.api.ConfigException;
import org.tent4j.api.ErrorCode;
import org.tent4j.api.MemoryKind;
import org.tent4j.api.Permission;
import org.tent4j.api.TransferException;
import org.tent4j.spi.Availability;
import org.tent4j.spi.OptionSpec;
import org.tent4j.spi.OptionValues;
import org.tent4j.spi.TransportCapabilities;
import org.tent4j.spi.TransportProvider;
import org.tent4j.testkit.transport.TestTransportContext;

class RdmaTransportProviderTest {
    private final RdmaTransportProvider provider = new RdmaTransportProvider();

    @Test
    void foundThroughServiceLoader() {
        List<TransportProvider> rdma = ServiceLoader.load(TransportProvider.class).stream()
                .map(ServiceLoader.Provider::get).filter(p -> p.id().equals("rdma")).toList();
        assertEquals(1, rdma.size());
        assertEquals(RdmaTransportProvider.class, rdma.getFirst().getClass());
    }

    @Test
    void declaresHostMemoryRankAndReach() {
        TransportCapabilities caps = provider.capabilities();
        assertEquals(20, caps.rank());
        assertFalse(caps.sameHostOnly());
        assertTrue(caps.supports(MemoryKind.CPU, MemoryKind.CPU));
        assertFalse(caps.supports(MemoryKind.CUDA, MemoryKind.CPU), "the provider declares host memory; an instance with gpu_direct adds device memory");
        assertFalse(caps.supports(MemoryKind.CPU, MemoryKind.CUDA));
        assertEquals(1, caps.memoryPaths().size());
        assertEquals(1L << 30, caps.maxSliceSize());
        assertEquals(TransportProvider.SPI_VERSION, provider.spiVersion());
    }

    @Test
    void optionsAndDefaults() {
        Map<String, String> defaults = provider.options().stream()
                .collect(Collectors.toMap(OptionSpec::name, OptionSpec::defaultValue));
        assertEquals(Map.ofEntries(Map.entry("devices", ""), Map.entry("port", "1"), Map.entry("gid_index", "-1"),
                Map.entry("max_qp_wr", "256"), Map.entry("max_sge", "4"), Map.entry("path_mtu", "4096"),
                Map.entry("qps_per_peer", "2"), Map.entry("cq_size", "4096"), Map.entry("timeout", "14"),
                Map.entry("retry_cnt", "7"), Map.entry("rnr_retry", "7"), Map.entry("service_level", "0"),
                Map.entry("traffic_class", "0"), Map.entry("gpu_direct", "true")), defaults);
        RdmaOptions o = RdmaOptions.from(OptionValues.parse(RdmaOptions.PREFIX, provider.options(), Map.of()));
        assertEquals(List.of(), o.devices());
        assertTrue(o.allows("mlx5_3"));
        assertEquals(Verbs.IBV_MTU_4096, o.pathMtuEnum());
        RdmaOptions some = RdmaOptions.from(OptionValues.parse(RdmaOptions.PREFIX, provider.options(),
                Map.of("devices", " mlx5_0, mlx5_1 ,", "path_mtu", "1024")));
        assertEquals(List.of("mlx5_0", "mlx5_1"), some.devices());
        assertFalse(some.allows("mlx5_2"));
        assertEquals(Verbs.IBV_MTU_1024, some.pathMtuEnum());
    }

    @Test
    void badOptionValuesNameTheKey() {
        ConfigException mtu = assertThrows(ConfigException.class, () -> RdmaOptions.from(OptionValues.parse(
                RdmaOptions.PREFIX, provider.options(), Map.of("path_mtu", "1500"))));
        assertEquals("transports.rdma.path_mtu", mtu.key());
        ConfigException retry = assertThrows(ConfigException.class, () -> RdmaOptions.from(OptionValues.parse(
                RdmaOptions.PREFIX, provider.options(), Map.of("retry_cnt", "8"))));
        assertEquals("transports.rdma.retry_cnt", retry.key());
        assertTrue(retry.getMessage().contains("0..7"), retry.getMessage());
        ConfigException qps = assertThrows(ConfigException.class, () -> RdmaOptions.from(OptionValues.parse(
                RdmaOptions.PREFIX, provider.options(), Map.of("qps_per_peer", "0"))));
        assertEquals("transports.rdma.qps_per_peer", qps.key());
    }

    @Test
    void accessFlagsFollowPermission() {
        assertEquals(1, RdmaTransport.accessFlags(Permission.LOCAL_ONLY));
        assertEquals(1 | 4, RdmaTransport.accessFlags(Permission.READ_ONLY));
        assertEquals(1 | 2 | 4, RdmaTransport.accessFlags(Permission.READ_WRITE));
    }

    @Test
    void unavailableHereWithThePreciseCause() {
        assumeTrue(NoDevice.libraryInstalled() && NoDevice.kernelHasNoVerbs(), "kernel has verbs support");
        Availability a = provider.availability();
        assertFalse(a.isAvailable());
        assertEquals(NoDevice.ENOSYS_CAUSE, a.reason());
        assertSame(a, provider.availability(), "probed once and cached");
        assertSame(a, new RdmaTransportProvider().availability(), "cached once per class loader, not per provider");
        assertFalse(Rdma.isAvailable());
        assertSame(a.unavailabilityCause(), Rdma.unavailabilityCause());
        TransferException e = assertThrows(TransferException.class, Rdma::ensureAvailability);
        assertEquals(ErrorCode.TRANSPORT_UNAVAILABLE, e.code());
        assertSame(a.unavailabilityCause(), e.getCause());
    }

    @Test
    void createThrowsTransportUnavailableWithTheCause() {
        assumeTrue(NoDevice.libraryInstalled() && NoDevice.kernelHasNoVerbs(), "kernel has verbs support");
        try (TestTransportContext ctx = new TestTransportContext("a", "m", "rdma", provider.options(), Map.of(),
                Duration.ofSeconds(5))) {
            TransferException e = assertThrows(TransferException.class, () -> provider.create(ctx));
            assertEquals(ErrorCode.TRANSPORT_UNAVAILABLE, e.code());
            assertEquals("rdma transport is unavailable: " + NoDevice.ENOSYS_CAUSE, e.getMessage());
        }
    }

    @Test
    void transportOpenAlsoRefusesWithTheCause() {
        // past the provider's gate, opening devices directly meets the same kernel answer
        assumeTrue(NoDevice.libraryInstalled() && NoDevice.kernelHasNoVerbs(), "kernel has verbs support");
        try (TestTransportContext ctx = new TestTransportContext("a", "m", "rdma", provider.options(), Map.of(),
                Duration.ofSeconds(5))) {
            RdmaOptions options = RdmaOptions.from(ctx.options());
            TransferException e = assertThrows(TransferException.class,
                    () -> RdmaTransport.open(ctx, options, VerbsLibrary.load()));
            assertEquals(ErrorCode.TRANSPORT_UNAVAILABLE, e.code());
            assertEquals("rdma: " + NoDevice.ENOSYS_CAUSE, e.getMessage());
        }
    }
}
