package org.tent4j.it;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.io.StringWriter;
import java.lang.foreign.MemorySegment;
import java.lang.reflect.Method;
import java.net.URISyntaxException;
import java.net.URL;
import java.net.URLClassLoader;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;

import javax.tools.JavaCompiler;
import javax.tools.ToolProvider;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.tent4j.api.Location;
import org.tent4j.api.Notification;
import org.tent4j.api.Permission;
import org.tent4j.api.RegisteredMemory;
import org.tent4j.api.TransferEngine;

/**
 * README's Java block, extracted as written, compiles against te-api alone (what an application needs to compile) and
 * runs against a real peer engine: its WRITE lands, its READ completes, its notification arrives. So the README cannot
 * rot into code that does not compile or does not work.
 */
class ReadmeExampleTest {
    private static final String FENCE = "```java\n";

    static String readmeJavaBlock() throws IOException {
        return readmeJavaBlock("Quickstart");
    }

    /** The README's ```java block that declares {@code public class <name>}. */
    static String readmeJavaBlock(String name) throws IOException {
        String readme = Files.readString(Path.of(System.getProperty("tent4j.root", "..")).resolve("README.md"));
        for (int start = readme.indexOf(FENCE); start >= 0; start = readme.indexOf(FENCE, start + 1)) {
            int end = readme.indexOf("\n```", start + FENCE.length());
            assertTrue(end > start, "a ```java block of README.md is not closed");
            String block = readme.substring(start + FENCE.length(), end + 1);
            if (block.contains("public class " + name + " ")) {
                return block;
            }
        }
        throw new AssertionError("README.md has no ```java block with public class " + name);
    }

    private static Path compile(Path dir, String name, Class<?>... api) throws IOException, URISyntaxException {
        Path file = dir.resolve(name + ".java");
        Files.writeString(file, readmeJavaBlock(name));
        StringBuilder classPath = new StringBuilder();
        for (Class<?> c : api) {
            classPath.append(classPath.isEmpty() ? "" : java.io.File.pathSeparator).append(location(c));
        }
        JavaCompiler javac = ToolProvider.getSystemJavaCompiler();
        StringWriter diagnostics = new StringWriter();
        boolean compiled = javac.getTask(diagnostics, null, null,
                List.of("-d", dir.toString(), "-classpath", classPath.toString(), "-Xlint:all", "-Werror"),
                null, javac.getStandardFileManager(null, null, null).getJavaFileObjects(file)).call();
        assertTrue(compiled, "README's " + name + " does not compile against " + classPath + ":\n" + diagnostics);
        return dir;
    }

    /** The store quickstart compiles against te-api and the store alone, and runs against a real master. */
    @Test
    void readmeStoreBlockCompilesAgainstTheApiAndTheStoreAndRoundTripsAValue(@TempDir Path dir) throws Exception {
        compile(dir, "StoreQuickstart", TransferEngine.class, org.tent4j.store.client.StoreClient.class);
        try (org.tent4j.store.rpc.MasterServer master = org.tent4j.store.rpc.MasterServer.start(
                org.tent4j.store.master.MasterConfig.defaults(), org.tent4j.store.StoreClock.system(), "127.0.0.1", 0, 100);
             URLClassLoader loader = new URLClassLoader(new URL[] {dir.toUri().toURL()},
                     ReadmeExampleTest.class.getClassLoader())) {
            Method main = loader.loadClass("StoreQuickstart").getMethod("main", String[].class);
            // it throws if the value read back is not the value put
            main.invoke(null, (Object) new String[] {"127.0.0.1:" + master.port()});
            assertEquals(false, master.master().exists("layer-3"), "its only replica went with the memory its close() unmounted");
            assertEquals(List.of(), master.master().segments(), "its close() unmounted the memory it lent");
        }
    }

    @Test
    void readmeJavaBlockCompilesAgainstTheApiAndMovesBytes(@TempDir Path dir) throws Exception {
        String source = readmeJavaBlock();
        assertTrue(source.contains("public class Quickstart"), "the README block is the Quickstart class");
        Path file = dir.resolve("Quickstart.java");
        Files.writeString(file, source);
        JavaCompiler javac = ToolProvider.getSystemJavaCompiler();
        StringWriter diagnostics = new StringWriter();
        boolean compiled = javac.getTask(diagnostics, null, null,
                List.of("-d", dir.toString(), "-classpath", location(TransferEngine.class).toString(), "-Xlint:all",
                        "-Werror"),
                null, javac.getStandardFileManager(null, null, null).getJavaFileObjects(file)).call();
        assertTrue(compiled, "README's Java block does not compile against te-api:\n" + diagnostics);

        try (TransferEngine peer = TransferEngine.create(TransferEndToEndTest.cfg().build())) {
            RegisteredMemory target = peer.allocate(2 << 20, Location.CPU, Permission.READ_WRITE);
            TargetProcess.pattern(target.segment(), 31);
            MemorySegment zeros = MemorySegment.ofArray(new byte[1 << 20]);
            long readHalfCrc = TargetProcess.crc(target.segment().asSlice(1 << 20, 1 << 20));

            try (URLClassLoader loader = new URLClassLoader(new URL[] {dir.toUri().toURL()},
                    ReadmeExampleTest.class.getClassLoader())) {
                Method main = loader.loadClass("Quickstart").getMethod("main", String[].class);
                main.invoke(null, (Object) new String[] {peer.segmentName()});
            }
            assertEquals(TargetProcess.crc(zeros), TargetProcess.crc(target.segment().asSlice(0, 1 << 20)),
                    "the WRITE of the example's zeroed first MiB landed");
            assertEquals(readHalfCrc, TargetProcess.crc(target.segment().asSlice(1 << 20, 1 << 20)),
                    "the READ left the peer's second MiB alone");
            Notification n = peer.awaitNotification(Duration.ofSeconds(10));
            assertNotNull(n, "the example's notification never arrived");
            assertEquals("layer-3 ready", n.message());
        }
    }

    private static Path location(Class<?> type) throws URISyntaxException {
        return Path.of(type.getProtectionDomain().getCodeSource().getLocation().toURI());
    }
}
