package org.tent4j.transport.efa;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.ServiceLoader;

import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.tent4j.api.ConfigException;
import org.tent4j.api.ErrorCode;
import org.tent4j.api.MemoryKind;
import org.tent4j.api.TransferException;
import org.tent4j.spi.Availability;
import org.tent4j.spi.OptionSpec;
import org.tent4j.spi.OptionValues;
import org.tent4j.spi.TransportCapabilities;
import org.tent4j.spi.TransportProvider;
import org.tent4j.testkit.transport.TestTransportContext;

/** Decisions and encodings that need no fabric, plus what this machine (no EFA device) must report. */
class EfaUnitTest {
    private static final long BUF = 0x7f12_3456_7000L;

    @Test
    void offsetAddressingWithRequestedKeys() {
        MrMode tcp = new MrMode(0); // what tcp;ofi_rxm, sockets and udp;ofi_rxd report
        assertFalse(tcp.virtualAddresses());
        assertFalse(tcp.providerKeys());
        assertFalse(tcp.localDescriptors());
        assertEquals(0, tcp.unsupported());
        assertEquals(0, tcp.publishedBase(BUF));
        assertEquals(42, tcp.requestedKey(42));
        // the initiator turns a remote address into an offset into the region
        assertEquals(100, MrMode.rmaAddress(tcp.publishedBase(BUF), BUF, BUF + 100));
        assertEquals("none", tcp.toString());
    }

    @Test
    void virtualAddressing() {
        MrMode shm = new MrMode(FiAbi.FI_MR_VIRT_ADDR);
        assertTrue(shm.virtualAddresses());
        assertEquals(BUF, shm.publishedBase(BUF));
        assertEquals(BUF + 100, MrMode.rmaAddress(shm.publishedBase(BUF), BUF, BUF + 100));
        assertEquals(7, shm.requestedKey(7));
        assertEquals("FI_MR_VIRT_ADDR", shm.toString());
    }

    @Test
    void efaModeUsesProviderKeysAndLocalDescriptors() {
        MrMode efa = new MrMode(FiAbi.FI_MR_LOCAL | FiAbi.FI_MR_VIRT_ADDR | FiAbi.FI_MR_ALLOCATED
                | FiAbi.FI_MR_PROV_KEY);
        assertTrue(efa.providerKeys());
        assertTrue(efa.localDescriptors());
        assertTrue(efa.virtualAddresses());
        assertEquals(0, efa.requestedKey(9), "the provider chooses the key");
        assertEquals(0, efa.unsupported());
        assertEquals("FI_MR_LOCAL|FI_MR_VIRT_ADDR|FI_MR_ALLOCATED|FI_MR_PROV_KEY", efa.toString());
        assertEquals(MrMode.SUPPORTED, efa.bits(), "the hints ask for exactly what is implemented");
    }

    @Test
    void modesThatAreNotImplementedAreFlagged() {
        assertEquals(FiAbi.FI_MR_ENDPOINT, new MrMode(FiAbi.FI_MR_ENDPOINT | FiAbi.FI_MR_VIRT_ADDR).unsupported());
        assertEquals(FiAbi.FI_MR_HMEM | FiAbi.FI_MR_RAW, new MrMode(FiAbi.FI_MR_HMEM | FiAbi.FI_MR_RAW).unsupported());
        assertEquals(0, new MrMode(1).unsupported(), "legacy FI_MR_BASIC is tolerated");
    }

    @Test
    void segmentAttributesEncodeEveryEndpointAddress() {
        byte[] a = {0x02, 0x00, (byte) 0xc3, 0x50, 127, 0, 0, 1};
        byte[] b = {(byte) 0xff, 0x01};
        Map<String, String> attrs = EfaAttributes.segment("tcp;ofi_rxm", new byte[][] {a, b}, 0x10);
        assertEquals("tcp;ofi_rxm", attrs.get("provider"));
        assertEquals("0200c3507f000001,ff01", attrs.get("addr"));
        assertEquals("0x10", attrs.get("mr_mode"));
        byte[][] back = EfaAttributes.addresses(attrs.get("addr"));
        assertArrayEquals(a, back[0]);
        assertArrayEquals(b, back[1]);
        assertThrows(IllegalArgumentException.class, () -> EfaAttributes.addresses("abc"));
        assertThrows(IllegalArgumentException.class, () -> EfaAttributes.addresses("zz"));
        assertThrows(IllegalArgumentException.class, () -> EfaAttributes.addresses(""));
    }

    @Test
    void bufferAttributesRoundTripUnsigned64BitKeys() {
        Map<String, String> attrs = EfaAttributes.buffer(-2L, BUF);
        assertEquals("18446744073709551614", attrs.get("key"));
        assertEquals("0x7f1234567000", attrs.get("base"));
        EfaAttributes.RemoteRegion r = EfaAttributes.region(attrs);
        assertEquals(-2L, r.key());
        assertEquals(BUF, r.base());
        assertEquals(0, EfaAttributes.region(EfaAttributes.buffer(5, 0)).base());
        assertNull(EfaAttributes.region(Map.of()), "LOCAL_ONLY buffers publish no key");
        assertThrows(IllegalArgumentException.class, () -> EfaAttributes.region(Map.of("key", "1", "base", "12")));
        assertThrows(NumberFormatException.class, () -> EfaAttributes.region(Map.of("key", "-1")));
    }

    @Test
    void errorNumbersMapToCodes() {
        assertEquals(ErrorCode.PERMISSION_DENIED, FabricErrors.code(-FiAbi.FI_EACCES));
        assertEquals(ErrorCode.PERMISSION_DENIED, FabricErrors.code(FiAbi.FI_ENOKEY));
        assertEquals(ErrorCode.TIMEOUT, FabricErrors.code(FiAbi.FI_ETIMEDOUT));
        assertEquals(ErrorCode.PEER_UNREACHABLE, FabricErrors.code(-FiAbi.FI_ECONNREFUSED));
        assertEquals(ErrorCode.PEER_UNREACHABLE, FabricErrors.code(FiAbi.FI_EHOSTUNREACH));
        assertEquals(ErrorCode.PEER_FAILED, FabricErrors.code(FiAbi.FI_EIO));
        assertEquals(ErrorCode.PEER_FAILED, FabricErrors.code(FiAbi.FI_ECANCELED), "only the provider aborts");
        assertEquals(ErrorCode.PEER_FAILED, FabricErrors.code(FiAbi.FI_ECONNRESET));
        assertEquals(ErrorCode.INVALID_ARGUMENT, FabricErrors.code(FiAbi.FI_EMSGSIZE));
        assertEquals(ErrorCode.TOO_MANY_REQUESTS, FabricErrors.code(FiAbi.FI_ENOMEM));
        assertEquals(ErrorCode.TRANSPORT_UNAVAILABLE, FabricErrors.code(FiAbi.FI_ENOSYS));
        assertEquals(ErrorCode.PEER_FAILED, FabricErrors.code(12345));
        assertTrue(FabricErrors.hint(FiAbi.FI_ECANCELED).contains("rejects"));
    }

    @Test
    void cStructsArePaddedLikeC() {
        assertEquals(120, FiAbi.FI_INFO.byteSize());
        assertEquals(32, FiAbi.off(FiAbi.FI_INFO, "src_addrlen"), "after the 4-byte addr_format");
        assertEquals(80, FiAbi.FI_TX_ATTR.byteSize(), "tail padding after tclass");
        assertEquals(36, FiAbi.DOMAIN_MR_MODE);
        assertEquals(64, FiAbi.CONTEXT_SIZE);
        assertEquals(40, FiAbi.CQE_SIZE);
        assertEquals(56, FiAbi.ERR_ERR);
        assertEquals(0x10011, FiAbi.API_VERSION);
    }

    @Test
    void providerIsFoundAndDeclaresItsCapabilities() {
        TransportProvider p = ServiceLoader.load(TransportProvider.class).stream().map(ServiceLoader.Provider::get)
                .filter(t -> t.id().equals("efa")).findFirst().orElseThrow();
        assertTrue(p instanceof EfaTransportProvider);
        TransportCapabilities caps = p.capabilities();
        assertEquals(25, caps.rank());
        assertFalse(caps.sameHostOnly());
        assertTrue(caps.supports(MemoryKind.CPU, MemoryKind.CPU));
        assertFalse(caps.supports(MemoryKind.CUDA, MemoryKind.CPU), "no FI_HMEM registration");
        assertTrue(caps.maxSliceSize() > 0 && caps.maxSliceSize() <= 64L << 20);
        assertEquals(List.of("provider", "endpoint_count", "cq_size", "progress_interval"),
                p.options().stream().map(OptionSpec::name).toList());
    }

    @Test
    void defaultProviderComesFromTheEnvironment() {
        String env = System.getenv("FI_PROVIDER");
        String expected = env == null || env.isBlank() ? "efa" : env.strip();
        assertEquals(expected, Efa.defaultProvider());
        OptionValues o = OptionValues.parse("transports.efa.", new EfaTransportProvider().options(), Map.of());
        assertEquals(expected, o.getString("provider"));
        assertEquals(1, o.getInt("endpoint_count"));
        assertEquals(Duration.ofNanos(200_000), o.getDuration("progress_interval"));
        assertThrows(ConfigException.class, () -> OptionValues.parse("transports.efa.",
                new EfaTransportProvider().options(), Map.of("lanes", "2")));
    }

    @Test
    void efaIsUnavailableHereWithThePreciseCause() {
        Availability a = Efa.availability("efa");
        assertFalse(a.isAvailable());
        String sysfs = Efa.noEfaDevice(Efa.SYS_CLASS_INFINIBAND);
        if (sysfs != null) {
            assertTrue(a.reason().contains("no EFA device: " + sysfs), a.reason());
        } else if (libfabricLoads()) {
            assertTrue(a.reason().contains("fi_getinfo for provider 'efa' returned -61 (No data available)"),
                    a.reason());
            assertTrue(a.reason().contains("no EFA device"), a.reason());
        } else {
            assertTrue(a.reason().contains("libfabric.so.1"), a.reason());
        }
        Availability none = Efa.availability("no-such-provider");
        assertFalse(none.isAvailable());
        if (libfabricLoads()) {
            assertTrue(none.reason().contains("-61") && none.reason().contains("'no-such-provider' is not available"),
                    none.reason());
        }
        if (System.getenv("FI_PROVIDER") == null) {
            assertSame(a, new EfaTransportProvider().availability(), "availability() is the default provider's probe");
            assertFalse(Efa.isAvailable());
            assertSame(a.unavailabilityCause(), Efa.unavailabilityCause());
            assertThrows(TransferException.class, Efa::ensureAvailability);
        }
        assertSame(none, Efa.availability("no-such-provider"), "probed once per provider name");
    }

    @Test
    void anEfaDeviceIsOneBoundToTheEfaDriverInSysfs(@TempDir Path dir) throws IOException {
        Path sys = dir.resolve("infiniband");
        assertTrue(Efa.noEfaDevice(sys).contains(sys + " does not exist"), Efa.noEfaDevice(sys));
        Files.createDirectory(sys);
        assertTrue(Efa.noEfaDevice(sys).contains("lists no device"), Efa.noEfaDevice(sys));
        Path drivers = Files.createDirectories(dir.resolve("bus/pci/drivers"));
        Files.createDirectories(sys.resolve("mlx5_0/device"));
        Files.createSymbolicLink(sys.resolve("mlx5_0/device/driver"), drivers.resolve("mlx5_core"));
        String why = Efa.noEfaDevice(sys);
        assertTrue(why.contains("mlx5_0 (driver mlx5_core)") && why.contains("libfabric not loaded"), why);
        Files.createDirectories(sys.resolve("rdmap0s6/device"));
        Files.createSymbolicLink(sys.resolve("rdmap0s6/device/driver"), drivers.resolve("efa"));
        assertNull(Efa.noEfaDevice(sys), "a device bound to the efa driver");
        assertTrue(Efa.isEfaProvider("efa") && Efa.isEfaProvider("efa-direct") && !Efa.isEfaProvider("tcp;ofi_rxm"));
    }

    @Test
    void aMissingOrWrongLibraryIsNamedInTheCause() {
        LibFabric.LibraryMissingException missing = assertThrows(LibFabric.LibraryMissingException.class,
                () -> LibFabric.open("libfabric-not-installed.so.1"));
        assertTrue(missing.getMessage().startsWith("libfabric-not-installed.so.1 not found"), missing.getMessage());
        LibFabric.LibraryMissingException wrong = assertThrows(LibFabric.LibraryMissingException.class,
                () -> LibFabric.open("libc.so.6"));
        assertEquals("libc.so.6 cannot be used: it does not export fi_getinfo", wrong.getMessage());
    }

    @Test
    void createChecksTheConfiguredProviderAndOptions() {
        Assumptions.assumeTrue(libfabricLoads(), "libfabric.so.1 is not installed");
        EfaTransportProvider p = new EfaTransportProvider();
        try (TestTransportContext ctx = context(Map.of("provider", "efa"))) {
            TransferException e = assertThrows(TransferException.class, () -> p.create(ctx));
            assertEquals(ErrorCode.TRANSPORT_UNAVAILABLE, e.code());
            assertTrue(e.getMessage().contains("-61"), e.getMessage());
        }
        try (TestTransportContext ctx = context(Map.of("provider", "tcp;ofi_rxm", "endpoint_count", "0"))) {
            ConfigException e = assertThrows(ConfigException.class, () -> p.create(ctx));
            assertEquals("transports.efa.endpoint_count", e.key());
        }
        try (TestTransportContext ctx = context(Map.of("provider", "tcp;ofi_rxm", "cq_size", "0"))) {
            assertEquals("transports.efa.cq_size", assertThrows(ConfigException.class, () -> p.create(ctx)).key());
        }
    }

    /**
     * Loading libfabric maps libpsm2, whose constructor replaces the JVM's SIGSEGV handler; without {@link
     * SignalHandlers} the first NullPointerException in compiled code kills the JVM. Checked in a child JVM, so a
     * regression fails this test instead of the whole test run.
     */
    @Test
    void theJvmSurvivesNullPointerExceptionsAfterLoadingLibfabric() throws Exception {
        Assumptions.assumeTrue(libfabricLoads(), "libfabric.so.1 is not installed");
        try (ChildJvm child = new ChildJvm(SignalSafetyMain.class, Map.of())) {
            assertTrue(child.next(60).startsWith("survived "));
            assertEquals(0, child.exitCode(30));
        }
    }

    /**
     * Restoring the JVM's handlers after the load leaves a window in which another thread's trap reaches libpsm2's
     * handler and the process dies; so PSM and PSM2 are told not to install them at all, as Open MPI does.
     */
    @Test
    void loadingLibfabricTellsPsmNotToInstallBacktraceHandlers() throws Throwable {
        Assumptions.assumeTrue(libfabricLoads(), "libfabric.so.1 is not installed");
        java.lang.foreign.Linker linker = java.lang.foreign.Linker.nativeLinker();
        java.lang.invoke.MethodHandle getenv = linker.downcallHandle(linker.defaultLookup().find("getenv").orElseThrow(),
                java.lang.foreign.FunctionDescriptor.of(java.lang.foreign.ValueLayout.ADDRESS, java.lang.foreign.ValueLayout.ADDRESS));
        try (java.lang.foreign.Arena arena = java.lang.foreign.Arena.ofConfined()) {
            for (String name : java.util.List.of("HFI_NO_BACKTRACE", "IPATH_NO_BACKTRACE")) {
                java.lang.foreign.MemorySegment v = (java.lang.foreign.MemorySegment) getenv.invokeExact(arena.allocateFrom(name));
                assertEquals("1", v.equals(java.lang.foreign.MemorySegment.NULL) ? null : v.reinterpret(16).getString(0), name);
            }
        }
    }

    private static TestTransportContext context(Map<String, String> options) {
        return new TestTransportContext("u", "m", "efa", new EfaTransportProvider().options(), options,
                Duration.ofSeconds(5));
    }

    private static boolean libfabricLoads() {
        try {
            LibFabric.load();
            return true;
        } catch (LibFabric.LibraryMissingException e) {
            return false;
        }
    }
}
