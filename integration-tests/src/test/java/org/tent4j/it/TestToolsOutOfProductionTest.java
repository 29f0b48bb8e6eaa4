package org.tent4j.it;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.ServiceLoader;
import java.util.stream.Stream;

import org.junit.jupiter.api.Test;
import org.tent4j.api.ConfigException;
import org.tent4j.api.EngineConfig;
import org.tent4j.api.Location;
import org.tent4j.api.Opcode;
import org.tent4j.api.Permission;
import org.tent4j.api.RegisteredMemory;
import org.tent4j.api.SegmentHandle;
import org.tent4j.api.TransferEngine;
import org.tent4j.api.TransferRequest;
import org.tent4j.api.TransferState;
import org.tent4j.api.TransferStatus;
import org.tent4j.api.TransportInfo;
import org.tent4j.spi.TransportProvider;

/**
 * Test tools stay out of what ships: the fault injector is opt-in by name (present on this class path through
 * te-testkit, yet absent from a default engine's transports and descriptor), and bin/'s class path
 * (cli/target/lib, built by the cli module before this one) holds no JUnit, te-testkit or faulty jar.
 */
class TestToolsOutOfProductionTest {

    @Test
    void aDefaultEngineNeitherRunsNorPublishesTheFaultInjector() {
        assertTrue(ServiceLoader.load(TransportProvider.class).stream().anyMatch(p -> p.get().id().equals("faulty")),
                "this test means something only with faulty on the class path");
        try (TransferEngine engine = TransferEngine.create(TransferEndToEndTest.cfg().build())) {
            List<String> running = engine.transports().stream().filter(TransportInfo::enabled).map(TransportInfo::id)
                    .toList();
            assertFalse(running.isEmpty());
            assertFalse(running.contains("faulty"), "default engine runs " + running);
            List<String> published = engine.segmentInfo(engine.localSegment()).transports();
            assertFalse(published.contains("faulty"), "default engine's descriptor lists " + published);
            TransportInfo faulty = engine.transports().stream().filter(t -> t.id().equals("faulty")).findFirst()
                    .orElseThrow();
            assertFalse(faulty.available());
            assertTrue(faulty.cause().contains("transports.faulty.wraps"), faulty.cause());
        }
    }

    @Test
    void theFaultInjectorRunsWhenNamedAndItsDelegateKeysReachTheWrappedTransport() {
        try (TransferEngine target = TransferEngine.create(faultyOverTcp().build());
             TransferEngine initiator = TransferEngine.create(faultyOverTcp().build())) {
            assertTrue(initiator.transports().stream().anyMatch(t -> t.id().equals("faulty") && t.enabled()));
            RegisteredMemory remote = target.allocate(1 << 20, Location.CPU, Permission.READ_WRITE);
            RegisteredMemory local = initiator.allocate(1 << 20, Location.CPU, Permission.READ_WRITE);
            TargetProcess.pattern(local.segment(), 41);
            SegmentHandle segment = initiator.openSegment(target.segmentName());
            TransferStatus w = initiator.transfer(TransferRequest.builder(Opcode.WRITE, local.segment(), segment,
                    remote.address()).require("faulty").build());
            assertEquals(TransferState.COMPLETED, w.state(), w.message());
            assertEquals(TargetProcess.crc(local.segment()), TargetProcess.crc(remote.segment()));
        }
        // a value the wrapped transport rejects stops the engine, naming the key, rather than skipping faulty
        ConfigException e = assertThrows(ConfigException.class, () -> TransferEngine.create(faultyOverTcp()
                .set("transports.faulty.delegate.lanes", "many").build()).close());
        assertEquals("transports.tcp.lanes", e.key());
    }

    private static EngineConfig.Builder faultyOverTcp() {
        return TransferEndToEndTest.cfg().set(EngineConfig.TRANSPORTS_ENABLED, "faulty")
                .set("transports.faulty.wraps", "tcp").set("transports.faulty.delegate.lanes", "1");
    }

    @Test
    void binClassPathHoldsNoTestTool() throws IOException {
        Path lib = Path.of(System.getProperty("tent4j.root", ".."), "cli", "target", "lib").toAbsolutePath().normalize();
        assertTrue(Files.isDirectory(lib), lib + " is missing: package the cli module before integration-tests");
        List<String> jars;
        try (Stream<Path> files = Files.list(lib)) {
            jars = files.map(p -> p.getFileName().toString()).filter(n -> n.endsWith(".jar")).sorted().toList();
        }
        assertTrue(jars.stream().anyMatch(n -> n.startsWith("te-runtime-")), "not bin/'s class path? " + jars);
        List<String> testTools = jars.stream().filter(n -> n.startsWith("junit-") || n.startsWith("opentest4j-")
                || n.startsWith("apiguardian-") || n.startsWith("te-testkit-") || n.startsWith("transport-faulty-"))
                .toList();
        assertEquals(List.of(), testTools, "test tools on bin/'s class path " + lib);
    }

    /**
     * A library decides nothing about its users' logging: only the command line ships a logback.xml (and brings
     * logback). Every tent4j jar on bin/'s class path but the cli's own is a library a user may depend on.
     */
    @Test
    void libraryJarsCarryNoLoggingConfiguration() throws IOException {
        Path lib = Path.of(System.getProperty("tent4j.root", ".."), "cli", "target", "lib").toAbsolutePath().normalize();
        List<Path> libraries;
        try (Stream<Path> files = Files.list(lib)) {
            libraries = files.filter(p -> p.getFileName().toString().matches(
                    "(te|transport|platform|metadata|integration|store)-.*\\.jar"))
                    .sorted().toList();
        }
        assertTrue(libraries.stream().anyMatch(p -> p.getFileName().toString().startsWith("store-")), "no store jar in " + lib);
        List<String> configs = new java.util.ArrayList<>();
        for (Path jar : libraries) {
            try (java.util.zip.ZipFile zip = new java.util.zip.ZipFile(jar.toFile())) {
                for (String name : List.of("logback.xml", "logback-test.xml", "log4j2.xml", "simplelogger.properties")) {
                    if (zip.getEntry(name) != null) {
                        configs.add(jar.getFileName() + "!/" + name);
                    }
                }
            }
        }
        assertEquals(List.of(), configs, "library jars with a logging configuration");
    }
}
