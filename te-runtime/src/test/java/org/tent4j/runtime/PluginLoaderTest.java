package org.tent4j.runtime;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.net.URI;
import java.net.URL;
import java.net.URLClassLoader;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.function.BiFunction;
import java.util.function.Supplier;

import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.read.ListAppender;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.slf4j.LoggerFactory;

import org.tent4j.api.ConfigException;
import org.tent4j.api.EngineConfig;
import org.tent4j.api.MemoryKind;
import org.tent4j.api.TransferEngine;
import org.tent4j.runtime.plugins.PluginLoader;
import org.tent4j.spi.Availability;
import org.tent4j.spi.MetadataStore;
import org.tent4j.spi.MetadataStoreProvider;
import org.tent4j.spi.TransportProvider;
import org.tent4j.spi.platform.DevicePlatform;
import org.tent4j.spi.platform.DevicePlatformProvider;

/** One version rule and one order for every SPI the runtime loads, and one logger that says what was refused. */
class PluginLoaderTest {

    @Test
    void aTransportBuiltForANewerSpiIsRefusedNamingBothVersionsAndAnOlderOneLoads() {
        refusesNewerAndLoadsOlder(PluginLoader.TRANSPORTS, (id, version) -> transport(id, version, 1000));
    }

    @Test
    void aDevicePlatformBuiltForANewerSpiIsRefusedNamingBothVersionsAndAnOlderOneLoads() {
        refusesNewerAndLoadsOlder(PluginLoader.DEVICE_PLATFORMS, (id, version) -> platform(id, version, 1000));
    }

    @Test
    void aMetadataStoreBuiltForANewerSpiIsRefusedNamingBothVersionsAndAnOlderOneLoads() {
        refusesNewerAndLoadsOlder(PluginLoader.METADATA_STORES, (scheme, version) -> store(scheme, version, 1000));
    }

    @Test
    void anEngineNeverOpensAMetadataStoreBuiltForANewerSpi() {
        List<String> lines = logged(() -> {
            ConfigException e = assertThrows(ConfigException.class, () -> TransferEngine.create(EngineTest.cfg()
                    .set(EngineConfig.METADATA_URI, "later-store://somewhere").build()).close());
            assertTrue(e.getMessage().contains("no metadata store for 'later-store://somewhere'"), e.getMessage());
            return null;
        });
        assertRefusedOnce(lines, "metadata store", "later-store", MetadataStoreProvider.SPI_VERSION + 1, MetadataStoreProvider.SPI_VERSION);
    }

    @Test
    void aProviderThatFailsToLoadIsSkippedWithOneLineAndTheOthersLoad(@TempDir Path dir) throws IOException {
        Path services = Files.createDirectories(dir.resolve("META-INF/services"));
        Files.writeString(services.resolve(TransportProvider.class.getName()), "org.tent4j.runtime.NoSuchTransportProvider\n"
                + ThrowsWhenBuilt.class.getName() + "\n");
        Thread t = Thread.currentThread();
        ClassLoader before = t.getContextClassLoader();
        List<TransportProvider> loaded = new ArrayList<>();
        List<String> lines;
        try (URLClassLoader loader = new URLClassLoader(new URL[] {dir.toUri().toURL()}, before)) {
            t.setContextClassLoader(loader);
            lines = logged(() -> loaded.addAll(PluginLoader.load(PluginLoader.TRANSPORTS)));
        } finally {
            t.setContextClassLoader(before);
        }
        assertTrue(loaded.stream().anyMatch(p -> p.id().equals("inproc")), loaded.toString());
        List<String> skipped = lines.stream().filter(l -> l.startsWith("a transport plugin skipped: it could not be loaded")).toList();
        assertEquals(2, skipped.size(), lines.toString());
        assertTrue(skipped.get(0).contains("NoSuchTransportProvider"), skipped.get(0));
        assertTrue(skipped.get(1).contains(ThrowsWhenBuilt.class.getName()) && skipped.get(1).contains("no licence file"), skipped.get(1));
    }

    /** A provider whose constructor fails, as one whose static set-up throws would. */
    public static final class ThrowsWhenBuilt extends InProcessTransportProvider {
        public ThrowsWhenBuilt() {
            throw new IllegalStateException("no licence file");
        }
    }

    @Test
    void providersAreOrderedByOrderThenIdForEverySpi() {
        assertEquals(List.of("z", "a", "b", "c"), PluginLoader.admit(PluginLoader.TRANSPORTS, List.of(transport("c", 1, 1000),
                transport("b", 1, 5), transport("z", 1, 1), transport("a", 1, 5))).stream().map(TransportProvider::id).toList());
        assertEquals(List.of("z", "a", "b", "c"), PluginLoader.admit(PluginLoader.DEVICE_PLATFORMS, List.of(platform("c", 1, 1000),
                platform("b", 1, 5), platform("z", 1, 1), platform("a", 1, 5))).stream().map(DevicePlatformProvider::id).toList());
        assertEquals(List.of("z", "a", "b", "c"), PluginLoader.admit(PluginLoader.METADATA_STORES, List.of(store("c", 1, 1000),
                store("b", 1, 5), store("z", 1, 1), store("a", 1, 5))).stream().map(p -> p.schemes().get(0)).toList());
    }

    @Test
    void theBuiltInPlatformsAreProbedCudaRocmAscendAsNvlinkReportsThem() {
        // the order nvlink once hard-coded: its causes list cuda first
        assertEquals(List.of("cuda", "rocm", "ascend", "other"), PluginLoader.admit(PluginLoader.DEVICE_PLATFORMS, List.of(
                platform("other", 1, DevicePlatformProvider.DEFAULT_ORDER), platform("ascend", 1, 30), platform("rocm", 1, 20),
                platform("cuda", 1, 10))).stream().map(DevicePlatformProvider::id).toList());
    }

    private static <P> void refusesNewerAndLoadsOlder(PluginLoader.Spi<P> spi, BiFunction<String, Integer, P> provider) {
        int ours = spi.runtimeVersion();
        List<P> admitted = new ArrayList<>();
        List<String> lines = logged(() -> admitted.addAll(PluginLoader.admit(spi, List.of(provider.apply("now", ours),
                provider.apply("later", ours + 1)))));
        assertRefusedOnce(lines, spi.name(), "later", ours + 1, ours);
        assertEquals(List.of("now"), admitted.stream().map(spi.id()).toList());
        // a runtime one SPI version further on still loads a provider built for this one
        var grown = new PluginLoader.Spi<>(spi.type(), spi.name(), ours + 1, spi.version(), spi.order(), spi.id());
        assertEquals(List.of("now"), PluginLoader.admit(grown, List.of(provider.apply("now", ours))).stream().map(spi.id()).toList());
    }

    private static void assertRefusedOnce(List<String> lines, String spi, String id, int theirs, int ours) {
        List<String> refused = lines.stream().filter(l -> l.contains("'" + id + "'")).toList();
        assertEquals(1, refused.size(), lines.toString());
        String line = refused.get(0);
        assertTrue(line.startsWith(spi + " plugin '" + id + "'") && line.contains("refused")
                && line.contains(spi + " SPI version " + theirs) && line.contains("supports 1 to " + ours), line);
    }

    private static List<String> logged(Supplier<?> action) {
        Logger logger = (Logger) LoggerFactory.getLogger(PluginLoader.class);
        ListAppender<ILoggingEvent> lines = new ListAppender<>();
        lines.start();
        logger.addAppender(lines);
        try {
            action.get();
        } finally {
            logger.detachAppender(lines);
        }
        return lines.list.stream().map(ILoggingEvent::getFormattedMessage).toList();
    }

    private static TransportProvider transport(String id, int version, int order) {
        return new InProcessTransportProvider() {
            @Override public String id() { return id; }
            @Override public int spiVersion() { return version; }
            @Override public int order() { return order; }
        };
    }

    private static DevicePlatformProvider platform(String id, int version, int order) {
        return new DevicePlatformProvider() {
            @Override public String id() { return id; }
            @Override public int spiVersion() { return version; }
            @Override public int order() { return order; }
            @Override public MemoryKind memoryKind() { return MemoryKind.NPU; }
            @Override public Availability availability() { throw new AssertionError("probed while loading"); }
            @Override public DevicePlatform create() { throw new AssertionError("opened while loading"); }
        };
    }

    private static MetadataStoreProvider store(String scheme, int version, int order) {
        return new MetadataStoreProvider() {
            @Override public int spiVersion() { return version; }
            @Override public int order() { return order; }
            @Override public List<String> schemes() { return List.of(scheme); }
            @Override public MetadataStore open(URI uri, Map<String, String> options) { throw new AssertionError("opened while loading"); }
        };
    }
}
