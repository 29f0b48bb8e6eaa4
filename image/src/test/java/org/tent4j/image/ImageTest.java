package org.tent4j.image;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermission;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The image tar the build made ({@code target/tent4j-image-<version>.tar}), as {@code docker load} would take it but
 * with no daemon: its manifest and config (entrypoint, user, environment, ports, one diff id per layer) read from the
 * tar, its layers unpacked in order into an empty directory, and commands run there as a container runtime would run
 * them: in that file system (chroot), in a mount and pid namespace of their own with {@code /proc} and {@code /dev},
 * as the image's user (10001), through its entrypoint.
 */
class ImageTest {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final List<String> ENTRYPOINT = List.of("/opt/tent4j/bin/tent4j");

    @TempDir
    static Path dir;

    static Path rootfs;
    static JsonNode config;
    static List<String> layers;

    @BeforeAll
    static void unpack() throws Exception {
        Path tar = Path.of(System.getProperty("image.tar", "target/tent4j-image.tar"));
        assertTrue(Files.isRegularFile(tar), "no image tar at " + tar + ": build the image module with -Pimage");
        Path blobs = Files.createDirectory(dir.resolve("tar"));
        untar(tar, blobs);
        JsonNode manifest = JSON.readTree(blobs.resolve("manifest.json").toFile());
        assertEquals(1, manifest.size(), "one image in the tar: " + manifest);
        config = JSON.readTree(blobs.resolve(manifest.get(0).get("Config").asText()).toFile());
        layers = new ArrayList<>();
        manifest.get(0).get("Layers").forEach(l -> layers.add(l.asText()));
        rootfs = Files.createDirectory(dir.resolve("rootfs"));
        for (String layer : layers) {
            untar(blobs.resolve(layer), rootfs);
        }
    }

    @Test
    void configNamesTheEntrypointTheUserTheRuntimeAndThePorts() {
        JsonNode c = config.get("config");
        List<String> entrypoint = new ArrayList<>();
        c.get("Entrypoint").forEach(a -> entrypoint.add(a.asText()));
        assertEquals(ENTRYPOINT, entrypoint);
        assertEquals("10001:10001", c.get("User").asText(), "runs as the unprivileged user tent4j");
        String env = c.get("Env").toString();
        assertTrue(env.contains("JAVA_HOME=/opt/java") && env.contains("PATH=/opt/java/bin:"), env);
        for (String port : List.of("50051/tcp", "9003/tcp", "8080/tcp")) {
            assertTrue(c.get("ExposedPorts").has(port), port + " in " + c.get("ExposedPorts"));
        }
        assertEquals(layers.size(), config.get("rootfs").get("diff_ids").size(), "a diff id per layer");
        assertTrue(layers.size() >= 2, "the base and tent4j's own layers: " + layers);
        assertEquals("amd64", config.get("architecture").asText());
    }

    @Test
    void theFileSystemHoldsTheDistributionTheRuntimeTheUserAndTheNativeLibraries() throws IOException {
        Path tent4j = rootfs.resolve("opt/tent4j");
        assertTrue(Files.getPosixFilePermissions(tent4j.resolve("bin/tent4j")).contains(PosixFilePermission.OTHERS_EXECUTE),
                "bin/tent4j executable");
        for (String f : List.of("LICENSE", "NOTICE", "licenses/THIRD-PARTY.txt", "conf/tent4j.properties", "lib/tent4j.aot",
                "lib/tent4j-bench.aot")) {
            assertTrue(Files.size(tent4j.resolve(f)) > 0, "/opt/tent4j/" + f);
        }
        assertTrue(Files.isExecutable(rootfs.resolve("opt/java/bin/java")), "/opt/java/bin/java");
        assertTrue(Files.readString(rootfs.resolve("etc/passwd")).contains("tent4j:x:10001:10001:"), "user tent4j");
        for (String lib : List.of("libfabric.so.1", "libibverbs.so.1")) {
            assertTrue(Files.exists(rootfs.resolve("usr/lib/x86_64-linux-gnu").resolve(lib)), lib);
        }
    }

    @Test
    void theEntrypointStartsWithTheCacheTrainedInTheImage() throws Exception {
        Result r = inImage(List.of("-V"), "TENT4J_JAVA_OPTS=-Xlog:aot=info:stderr");
        assertEquals(0, r.status, r.output);
        assertTrue(r.output.contains("Opened AOT cache") && !r.output.contains("[error]"), r.output);
    }

    @Test
    void theDoctorFindsTheTransportsAndTheImagesNativeLibraries() throws Exception {
        // libfabric's own tcp provider as the default: the efa probe loads libfabric only for a provider it can ask
        // (for efa itself it first looks for an EFA device in sysfs, and this machine has none)
        Result r = inImage(List.of("doctor", "--no-options"), "FI_PROVIDER=tcp;ofi_rxm");
        assertEquals(0, r.status, r.output);
        assertTrue(r.output.contains("tcp") && r.output.contains("shm"), r.output);
        // libfabric and libibverbs load; only the devices are missing on this machine
        int efa = r.output.indexOf("\n  efa ");
        assertTrue(efa >= 0, r.output);
        String efaState = r.output.substring(efa + 1).lines().skip(1).findFirst().orElse("").strip();
        assertTrue(efaState.equals("available") || efaState.contains("fi_getinfo"),
                "libfabric loaded in the image and its tcp provider asked: " + r.output);
        assertTrue(r.output.contains("ibv_get_device_list"), "libibverbs loaded in the image: " + r.output);
    }

    @Test
    void aLoopbackBenchInTheImageMovesEveryByteIntact() throws Exception {
        Result r = inImage(List.of("bench", "--mode=loopback", "--protocol=tcp", "--block-size=64k", "--batch-size=8",
                "--threads=1", "--buffer-size=16m", "--duration=1", "--warmup=0", "--check_consistency"));
        assertEquals(0, r.status, r.output);
        assertTrue(r.output.contains("errors      0"), r.output);
    }

    private record Result(int status, String output) {
    }

    /** The entrypoint with {@code args}, as the image's user, with the image's environment plus {@code env}. */
    private static Result inImage(List<String> args, String... env) throws Exception {
        List<String> command = new ArrayList<>(List.of("unshare", "--mount", "--pid", "--fork", "sh", "-c",
                "mount -t proc proc \"$0/proc\" && mount --rbind /dev \"$0/dev\" && exec chroot --userspec=10001:10001 \"$0\" \"$@\"",
                rootfs.toString(), "env", "-i"));
        config.get("config").get("Env").forEach(e -> command.add(e.asText()));
        command.add("HOME=/var/lib/tent4j");
        command.addAll(List.of(env));
        command.addAll(ENTRYPOINT);
        command.addAll(args);
        return run(command);
    }

    private static void untar(Path archive, Path into) throws Exception {
        List<String> command = List.of("tar", "-xf", archive.toString(), "-C", into.toString());
        Result r = run(command);
        assertEquals(0, r.status, command + ": " + r.output);
    }

    private static Result run(List<String> command) throws Exception {
        Process p = new ProcessBuilder(command).redirectErrorStream(true).start();
        p.getOutputStream().close();
        byte[] out = p.getInputStream().readAllBytes();
        assertTrue(p.waitFor(120, TimeUnit.SECONDS), "still running: " + command);
        return new Result(p.exitValue(), new String(out, StandardCharsets.UTF_8));
    }
}
