package org.tent4j.transport.nvlink;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeFalse;

import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.ServiceLoader;
import java.util.Set;

import org.junit.jupiter.api.Test;
import org.tent4j.api.ErrorCode;
import org.tent4j.api.MemoryKind;
import org.tent4j.api.TransferException;
import org.tent4j.spi.Availability;
import org.tent4j.spi.MemoryPath;
import org.tent4j.spi.TransportCapabilities;
import org.tent4j.spi.TransportProvider;
import org.tent4j.spi.platform.DevicePlatform;
import org.tent4j.spi.platform.DevicePlatformProvider;
import org.tent4j.testkit.transport.TestTransportContext;

class NvlinkProviderTest {

    /** A platform provider that is never available, with a fixed cause. */
    record Unavailable(String id, MemoryKind memoryKind, String cause) implements DevicePlatformProvider {
        /** The order the real cuda, rocm and ascend providers declare. */
        @Override
        public int order() {
            return switch (id) {
                case "cuda" -> 10;
                case "rocm" -> 20;
                case "ascend" -> 30;
                default -> DEFAULT_ORDER;
            };
        }

        @Override
        public Availability availability() {
            return Availability.unavailable(cause);
        }

        @Override
        public DevicePlatform create() {
            throw new AssertionError("never created");
        }
    }

    @Test
    void serviceLoaderFindsNvlinkAsASameHostTransportOfRankFive() {
        TransportProvider p = ServiceLoader.load(TransportProvider.class).stream().map(ServiceLoader.Provider::get)
                .filter(t -> t.id().equals("nvlink")).findFirst().orElseThrow();
        assertTrue(p.capabilities().sameHostOnly());
        assertEquals(5, p.capabilities().rank());
        assertFalse(p.capabilities().cancellation());
    }

    @Test
    void unavailableHereNamingEveryPlatformsOwnCause() {
        List<DevicePlatformProvider> platforms = ServiceLoader.load(DevicePlatformProvider.class).stream()
                .map(ServiceLoader.Provider::get).toList();
        assumeFalse(platforms.stream().anyMatch(p -> p.availability().isAvailable()), "a device platform is available here");
        Map<String, String> causes = new java.util.HashMap<>();
        platforms.forEach(p -> causes.put(p.id(), p.availability().reason()));
        assertEquals(Set.of("cuda", "rocm", "ascend"), causes.keySet());

        Availability a = new NvlinkTransportProvider().availability();
        assertFalse(a.isAvailable());
        assertEquals("no device platform available: cuda: " + causes.get("cuda") + "; rocm: " + causes.get("rocm")
                + "; ascend: " + causes.get("ascend"), a.reason());
        // the platforms' own causes on this kind of machine (see the platform modules' tests)
        assertTrue(causes.get("ascend").startsWith("libascendcl.so not found (searched: libascendcl.so"), causes.get("ascend"));
        assertSame(a, new NvlinkTransportProvider().availability(), "probed once per class loader, not per provider");
        // declared from the platform modules present, although none can run here
        TransportCapabilities declared = new NvlinkTransportProvider().capabilities();
        assertTrue(declared.supports(MemoryKind.CUDA, MemoryKind.CUDA) && declared.supports(MemoryKind.CPU, MemoryKind.ROCM)
                && declared.supports(MemoryKind.NPU, MemoryKind.CPU), declared.toString());
    }

    @Test
    void causesAreListedCudaRocmAscendWhateverTheDiscoveryOrder() {
        NvlinkTransportProvider p = new NvlinkTransportProvider(() -> List.of(
                new Unavailable("ascend", MemoryKind.NPU, "libascendcl.so not found (searched: libascendcl.so)"),
                new Unavailable("rocm", MemoryKind.ROCM, "hipGetDeviceCount failed: 100 hipErrorNoDevice"),
                new Unavailable("cuda", MemoryKind.CUDA, "cudaGetDeviceCount failed: 35 cudaErrorInsufficientDriver"
                        + " (CUDA driver version is insufficient for CUDA runtime version)")));
        assertEquals("no device platform available: cuda: cudaGetDeviceCount failed: 35 cudaErrorInsufficientDriver"
                + " (CUDA driver version is insufficient for CUDA runtime version); rocm: hipGetDeviceCount failed: 100"
                + " hipErrorNoDevice; ascend: libascendcl.so not found (searched: libascendcl.so)", p.availability().reason());
        TransferException e = assertThrows(TransferException.class, () -> p.create(null));
        assertEquals(ErrorCode.TRANSPORT_UNAVAILABLE, e.code());
        assertTrue(e.getMessage().startsWith("nvlink transport is unavailable: no device platform available: cuda: "));
    }

    @Test
    void withoutAnyPlatformModuleTheCauseSaysWhatToAdd() {
        assertEquals("no device platform available: no DevicePlatformProvider on the class path (add platform-cuda,"
                + " platform-rocm or platform-ascend)", new NvlinkTransportProvider(List::of).availability().reason());
    }

    @Test
    void capabilitiesDeclareThePlatformModulesPresentWithoutProbingAny() {
        DevicePlatformProvider rocm = new DevicePlatformProvider() {
            @Override public String id() { return "rocm"; }
            @Override public MemoryKind memoryKind() { return MemoryKind.ROCM; }
            @Override public Availability availability() { throw new AssertionError("capabilities() probed rocm"); }
            @Override public DevicePlatform create() { throw new AssertionError(); }
        };
        NvlinkTransportProvider p = new NvlinkTransportProvider(() -> List.of(rocm));
        TransportCapabilities c = p.capabilities();
        assertEquals(Set.of(MemoryPath.of(MemoryKind.ROCM, MemoryKind.ROCM), MemoryPath.of(MemoryKind.ROCM, MemoryKind.CPU),
                MemoryPath.of(MemoryKind.CPU, MemoryKind.ROCM)), c.memoryPaths());
        assertFalse(c.supports(MemoryKind.CPU, MemoryKind.CPU));
        assertFalse(c.supports(MemoryKind.CUDA, MemoryKind.CUDA));
        assertTrue(c.sameHostOnly());
        assertEquals(5, c.rank());
    }

    @Test
    void runsOnTheEnginesPlatformsAndRefusesToStartWithoutAny() {
        DevicePlatformProvider rocm = new DevicePlatformProvider() {
            @Override public String id() { return "rocm"; }
            @Override public MemoryKind memoryKind() { return MemoryKind.ROCM; }
            @Override public Availability availability() { return Availability.available(); }
            @Override public DevicePlatform create() { throw new AssertionError("nvlink must not open a platform itself"); }
        };
        NvlinkTransportProvider p = new NvlinkTransportProvider(() -> List.of(
                new Unavailable("cuda", MemoryKind.CUDA, "no"), rocm));
        assertTrue(p.availability().isAvailable());
        try (TestTransportContext context = new TestTransportContext("seg", "m", NvlinkTransportProvider.ID,
                p.options(), Map.of(), Duration.ofSeconds(5))) {
            TransferException none = assertThrows(TransferException.class, () -> p.create(context));
            assertEquals(ErrorCode.TRANSPORT_UNAVAILABLE, none.code());
            assertTrue(none.getMessage().contains("opened no device platform"), none.getMessage());
        }
        assertEquals(Set.of(MemoryPath.of(MemoryKind.ROCM, MemoryKind.ROCM), MemoryPath.of(MemoryKind.ROCM, MemoryKind.CPU),
                MemoryPath.of(MemoryKind.CPU, MemoryKind.ROCM)),
                NvlinkTransportProvider.capabilities(List.of(MemoryKind.ROCM)).memoryPaths(),
                "a running transport declares the paths of the platforms it was given");
    }

    @Test
    void ipcAttributesRoundTrip() {
        byte[] handle = new byte[72];
        for (int i = 0; i < handle.length; i++) {
            handle[i] = (byte) (i * 37 + 5);
        }
        IpcAttributes a = new IpcAttributes(handle, "cuda", 3, "0000:1b:00.0");
        Map<String, String> encoded = a.encode();
        assertEquals(Set.of("ipc", "platform", "device", "pci"), encoded.keySet());
        assertEquals("cuda", encoded.get("platform"));
        assertEquals("3", encoded.get("device"));
        IpcAttributes back = IpcAttributes.decode(encoded, "buffer x");
        assertEquals(a, back);
        assertArrayEquals(handle, back.handle());

        IpcAttributes noPci = new IpcAttributes(new byte[] {1, 2, 3}, "ascend", 0, "");
        assertFalse(noPci.encode().containsKey("pci"));
        assertEquals(noPci, IpcAttributes.decode(noPci.encode(), "buffer y"));
    }

    @Test
    void malformedAttributesAreAProtocolError() {
        TransferException missing = assertThrows(TransferException.class,
                () -> IpcAttributes.decode(Map.of("platform", "cuda"), "buffer [0x10, +4) of segment 'b'"));
        assertEquals(ErrorCode.PROTOCOL, missing.code());
        assertTrue(missing.getMessage().startsWith("buffer [0x10, +4) of segment 'b' carries no complete nvlink IPC attributes"));
        TransferException garbled = assertThrows(TransferException.class,
                () -> IpcAttributes.decode(Map.of("ipc", "***", "platform", "cuda", "device", "0"), "buffer z"));
        assertEquals(ErrorCode.PROTOCOL, garbled.code());
    }
}
