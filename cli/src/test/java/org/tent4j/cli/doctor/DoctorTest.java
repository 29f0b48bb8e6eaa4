package org.tent4j.cli.doctor;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.net.URI;
import java.net.URL;
import java.net.URLClassLoader;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.tent4j.api.MemoryKind;
import org.tent4j.api.TransferException;
import org.tent4j.spi.Availability;
import org.tent4j.spi.MetadataStore;
import org.tent4j.spi.MetadataStoreProvider;
import org.tent4j.spi.OptionSpec;
import org.tent4j.spi.Transport;
import org.tent4j.spi.TransportCapabilities;
import org.tent4j.spi.TransportContext;
import org.tent4j.spi.TransportProvider;
import org.tent4j.spi.platform.DevicePlatform;
import org.tent4j.spi.platform.DevicePlatformProvider;

import picocli.CommandLine;

/**
 * Runs doctor with extra providers made visible through the context class loader (so they never reach the engines
 * of other tests): one unavailable transport with options, one whose probe throws, one listed but missing class,
 * a device platform and a metadata store.
 */
public class DoctorTest {

    @Test
    void reportsEveryProviderWithItsCauseAndOptions(@TempDir Path dir) throws IOException {
        String out = runDoctor(dir);
        assertTrue(out.contains("faketx"), out);
        assertTrue(out.contains("rank 77"), out);
        assertTrue(out.contains("a transport that cannot run anywhere"), out);
        assertTrue(out.contains("UNAVAILABLE: libfake.so.1 not found"), out);
        assertTrue(out.contains("transports.faketx.lanes"), out);
        assertTrue(out.contains("default 4"), out);
        assertTrue(out.contains("connections per peer"), out);
        assertTrue(out.contains("max slice 1 MiB"), out);
        assertTrue(out.contains("same host only"), out);

        assertTrue(out.contains("brokentx"), out);
        assertTrue(out.contains("UNAVAILABLE: availability() threw java.lang.UnsatisfiedLinkError: no libbroken"), out);

        assertTrue(out.contains("could not load a provider"), out);
        assertTrue(out.contains("org.tent4j.cli.doctor.NoSuchProvider"), out);

        assertTrue(out.contains("fakegpu"), out);
        assertTrue(out.contains("memory cuda"), out);
        assertTrue(out.contains("UNAVAILABLE: no fake device"), out);

        assertTrue(out.contains("fakemeta://"), out);
        assertTrue(out.contains("metadata.fakemeta.ttl"), out);
    }

    @Test
    void exitsZeroAndNamesTheSections() {
        StringWriter out = new StringWriter();
        CommandLine cl = new CommandLine(new Doctor());
        cl.setOut(new PrintWriter(out, true));
        assertEquals(0, cl.execute("--no-options"));
        String s = out.toString();
        assertTrue(s.startsWith("tent4j doctor: Java "), s);
        assertTrue(s.contains("runtime: "), s);
        assertTrue(s.contains("transports ("), s);
        assertTrue(s.contains("device platforms ("), s);
        assertTrue(s.contains("metadata stores ("), s);
    }

    @Test
    void sizesAreShortAndExact() {
        assertEquals("64 MiB", Doctor.size(64L << 20));
        assertEquals("1 GiB", Doctor.size(1L << 30));
        assertEquals("4 KiB", Doctor.size(4096));
        assertEquals("1000 B", Doctor.size(1000));
        assertEquals("1025 KiB", Doctor.size(1025L << 10));
    }

    @Test
    void showsTheEnginesVerdictOnANewerSpiAndItsOrder(@TempDir Path dir) throws IOException {
        String out = runDoctor(dir);
        for (String spi : List.of("transport", "device platform", "metadata store")) {
            assertTrue(out.contains("REFUSED: built for " + spi + " SPI version 2, this runtime supports 1 to 1; the engine does not load it"), out);
        }
        assertTrue(!out.contains("a refused provider was probed"), out);
        // order() first, then id: firsttx (order 1) before brokentx, whose id sorts first
        assertTrue(out.indexOf("  firsttx ") >= 0 && out.indexOf("  firsttx ") < out.indexOf("  brokentx "), out);
        assertTrue(out.contains("order 1\n"), out);
    }

    private static String runDoctor(Path dir) throws IOException {
        Path services = Files.createDirectories(dir.resolve("META-INF/services"));
        Files.writeString(services.resolve(TransportProvider.class.getName()),
                UnavailableTransport.class.getName() + "\n" + BrokenTransport.class.getName() + "\n"
                        + "org.tent4j.cli.doctor.NoSuchProvider\n" + LaterTransport.class.getName() + "\n" + FirstTransport.class.getName() + "\n");
        Files.writeString(services.resolve(DevicePlatformProvider.class.getName()), FakePlatform.class.getName() + "\n"
                + LaterPlatform.class.getName() + "\n");
        Files.writeString(services.resolve(MetadataStoreProvider.class.getName()), FakeStore.class.getName() + "\n"
                + LaterStore.class.getName() + "\n");
        Thread t = Thread.currentThread();
        ClassLoader before = t.getContextClassLoader();
        try (URLClassLoader loader = new URLClassLoader(new URL[]{dir.toUri().toURL()}, before)) {
            t.setContextClassLoader(loader);
            StringWriter out = new StringWriter();
            CommandLine cl = new CommandLine(new Doctor());
            cl.setOut(new PrintWriter(out, true));
            assertEquals(0, cl.execute());
            return out.toString();
        } finally {
            t.setContextClassLoader(before);
        }
    }

    public static final class UnavailableTransport implements TransportProvider {
        @Override
        public String id() {
            return "faketx";
        }

        @Override
        public String description() {
            return "a transport that cannot run anywhere";
        }

        @Override
        public Availability availability() {
            return Availability.unavailable("libfake.so.1 not found");
        }

        @Override
        public TransportCapabilities capabilities() {
            return TransportCapabilities.builder().sameHostOnly(true).maxSliceSize(1 << 20).rank(77).build();
        }

        @Override
        public List<OptionSpec> options() {
            return List.of(OptionSpec.of("lanes", OptionSpec.Type.INT, 4, "connections per peer"));
        }

        @Override
        public Transport create(TransportContext context) {
            throw new UnsupportedOperationException("never available");
        }
    }

    public static final class BrokenTransport implements TransportProvider {
        @Override
        public String id() {
            return "brokentx";
        }

        @Override
        public Availability availability() {
            throw new UnsatisfiedLinkError("no libbroken in java.library.path");
        }

        @Override
        public TransportCapabilities capabilities() {
            return TransportCapabilities.builder().maxSliceSize(1 << 20).rank(5).build();
        }

        @Override
        public Transport create(TransportContext context) {
            throw new UnsupportedOperationException("never available");
        }
    }

    public static final class FakePlatform implements DevicePlatformProvider {
        @Override
        public String id() {
            return "fakegpu";
        }

        @Override
        public MemoryKind memoryKind() {
            return MemoryKind.CUDA;
        }

        @Override
        public Availability availability() {
            return Availability.unavailable("no fake device");
        }

        @Override
        public DevicePlatform create() {
            throw new UnsupportedOperationException("never available");
        }
    }

    public static final class FakeStore implements MetadataStoreProvider {
        @Override
        public List<String> schemes() {
            return List.of("fakemeta");
        }

        @Override
        public List<OptionSpec> options() {
            return List.of(OptionSpec.of("ttl", OptionSpec.Type.DURATION, "30s", "lease time"));
        }

        @Override
        public MetadataStore open(URI uri, Map<String, String> options) {
            throw new TransferException(org.tent4j.api.ErrorCode.METADATA_UNAVAILABLE, "fake");
        }
    }

    /** Built for a newer transport SPI: the engine refuses it, so doctor must say so and not probe it. */
    public static final class LaterTransport implements TransportProvider {
        @Override public int spiVersion() { return SPI_VERSION + 1; }
        @Override public String id() { return "latertx"; }
        @Override public Availability availability() { return Availability.unavailable("a refused provider was probed"); }
        @Override public TransportCapabilities capabilities() { return TransportCapabilities.builder().build(); }
        @Override public Transport create(TransportContext context) { throw new UnsupportedOperationException(); }
    }

    /** Declares an order before every other transport. */
    public static final class FirstTransport implements TransportProvider {
        @Override public int order() { return 1; }
        @Override public String id() { return "firsttx"; }
        @Override public Availability availability() { return Availability.unavailable("never runs"); }
        @Override public TransportCapabilities capabilities() { return TransportCapabilities.builder().build(); }
        @Override public Transport create(TransportContext context) { throw new UnsupportedOperationException(); }
    }

    public static final class LaterPlatform implements DevicePlatformProvider {
        @Override public int spiVersion() { return SPI_VERSION + 1; }
        @Override public String id() { return "latergpu"; }
        @Override public MemoryKind memoryKind() { return MemoryKind.CUDA; }
        @Override public Availability availability() { return Availability.unavailable("a refused provider was probed"); }
        @Override public DevicePlatform create() { throw new UnsupportedOperationException(); }
    }

    public static final class LaterStore implements MetadataStoreProvider {
        @Override public int spiVersion() { return SPI_VERSION + 1; }
        @Override public List<String> schemes() { return List.of("latermeta"); }
        @Override public Availability availability() { return Availability.unavailable("a refused provider was probed"); }
        @Override public MetadataStore open(URI uri, Map<String, String> options) { throw new UnsupportedOperationException(); }
    }
}
