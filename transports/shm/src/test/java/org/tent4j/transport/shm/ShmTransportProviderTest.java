package org.tent4j.transport.shm;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.ServiceLoader;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.tent4j.api.ConfigException;
import org.tent4j.api.ErrorCode;
import org.tent4j.api.MemoryKind;
import org.tent4j.api.TransferException;
import org.tent4j.spi.Availability;
import org.tent4j.spi.OptionSpec;
import org.tent4j.spi.TransportCapabilities;
import org.tent4j.spi.TransportProvider;
import org.tent4j.testkit.transport.TestTransportContext;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

class ShmTransportProviderTest {

    @Test
    void isFoundThroughServiceLoader() {
        List<String> ids = ServiceLoader.load(TransportProvider.class).stream()
                .map(p -> p.get().id()).toList();
        assertTrue(ids.contains("shm"), ids.toString());
    }

    @Test
    void declaresSameHostCpuToCpuAheadOfTcp() {
        TransportCapabilities caps = new ShmTransportProvider().capabilities();
        assertEquals(10, caps.rank());
        assertTrue(caps.sameHostOnly());
        assertFalse(caps.cancellation());
        assertEquals(1L << 30, caps.maxSliceSize());
        assertTrue(caps.supports(MemoryKind.CPU, MemoryKind.CPU));
        assertFalse(caps.supports(MemoryKind.CPU, MemoryKind.CUDA));
        assertEquals(1, caps.memoryPaths().size());
    }

    @Test
    void declaresItsOptionsWithDefaults() {
        Map<String, OptionSpec> byName = new java.util.HashMap<>();
        for (OptionSpec o : new ShmTransportProvider().options()) {
            byName.put(o.name(), o);
        }
        assertEquals(OptionSpec.Type.STRING, byName.get("dir").type());
        assertEquals("/dev/shm", byName.get("dir").defaultValue());
        assertEquals(OptionSpec.Type.SIZE, byName.get("copy_threshold").type());
        assertEquals("64k", byName.get("copy_threshold").defaultValue());
        assertEquals(OptionSpec.Type.INT, byName.get("copy_parallelism").type());
    }

    @Test
    void isAvailableWithDevShm() {
        Availability a = new ShmTransportProvider().availability();
        assertTrue(a.isAvailable(), a.toString()); // this machine has a writable /dev/shm
    }

    @Test
    void missingOrUnusableDirectoryIsUnavailableWithThePreciseCause(@TempDir Path tmp) throws Exception {
        Path missing = tmp.resolve("nope");
        Availability a = ShmTransportProvider.availability(missing);
        assertFalse(a.isAvailable());
        assertTrue(a.reason().contains(missing.toString()) && a.reason().contains("does not exist"), a.reason());

        Path file = Files.createFile(tmp.resolve("a-file"));
        Availability b = ShmTransportProvider.availability(file);
        assertFalse(b.isAvailable());
        assertTrue(b.reason().contains("not a directory"), b.reason());
    }

    @Test
    void createFailsForAnUnusableConfiguredDirectory(@TempDir Path tmp) {
        Path missing = tmp.resolve("missing");
        try (TestTransportContext ctx = new TestTransportContext("x", "m", "shm", new ShmTransportProvider().options(),
                Map.of("dir", missing.toString()), Duration.ofSeconds(5))) {
            TransferException e = assertThrows(TransferException.class, () -> new ShmTransportProvider().create(ctx));
            assertEquals(ErrorCode.TRANSPORT_UNAVAILABLE, e.code());
            assertTrue(e.getMessage().contains(missing.toString()), e.getMessage());
        }
    }

    @Test
    void unknownAndBadOptionsAreRejected() {
        List<OptionSpec> specs = new ShmTransportProvider().options();
        assertThrows(ConfigException.class, () -> new TestTransportContext("x", "m", "shm", specs,
                Map.of("dri", "/dev/shm"), Duration.ofSeconds(5)));
        try (TestTransportContext ctx = new TestTransportContext("x", "m", "shm", specs,
                Map.of("copy_parallelism", "0"), Duration.ofSeconds(5))) {
            ConfigException e = assertThrows(ConfigException.class, () -> new ShmTransportProvider().create(ctx));
            assertEquals("transports.shm.copy_parallelism", e.key());
        }
    }

    @Test
    void allocatesInTheConfiguredDirectory(@TempDir Path tmp) throws Exception {
        try (TestTransportContext ctx = new TestTransportContext("x", "m", "shm", new ShmTransportProvider().options(),
                Map.of("dir", tmp.toString()), Duration.ofSeconds(5))) {
            var t = new ShmTransportProvider().create(ctx);
            var alloc = t.allocator().orElseThrow().allocate(12_345, org.tent4j.api.Location.CPU);
            Path p = Path.of(alloc.backing().get("path"));
            assertEquals(tmp, p.getParent());
            assertEquals(12_345, Files.size(p));
            t.close();
            assertFalse(Files.exists(p));
        }
    }
}
