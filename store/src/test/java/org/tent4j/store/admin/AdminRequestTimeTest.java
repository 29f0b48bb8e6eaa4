package org.tent4j.store.admin;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.Test;

/**
 * The admin port closes a connection whose request has not arrived within a bound: the master's JVM has no other
 * HTTP server that would set one, and the JDK's default is none (a client sending half a request held an admin thread
 * for good). The bound is the JDK's own, read when its first server starts; this checks the master sets it. In a JVM
 * of its own: in this module's test JVM an engine started by another test sets the same default ({@code
 * EngineMetrics}), which would hide a master that sets none.
 */
class AdminRequestTimeTest {
    @Test
    void theAdminServerBoundsHowLongARequestMayTakeToArrive() throws IOException, InterruptedException {
        Process p = new ProcessBuilder(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                "-cp", System.getProperty("java.class.path"), LoadAdminServer.class.getName())
                .redirectErrorStream(true).start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8).strip();
        if (!p.waitFor(30, TimeUnit.SECONDS)) {
            p.destroyForcibly();
        }
        assertEquals(0, p.exitValue(), out);
        assertEquals("before=null after=30", out);
    }

    /** Loads {@link AdminServer} (its static initializer) in a fresh JVM and prints the property around it. */
    static final class LoadAdminServer {
        public static void main(String[] args) throws ClassNotFoundException {
            String before = System.getProperty(AdminServer.REQUEST_TIME_PROPERTY);
            Class.forName(AdminServer.class.getName(), true, LoadAdminServer.class.getClassLoader());
            System.out.println("before=" + before + " after=" + System.getProperty(AdminServer.REQUEST_TIME_PROPERTY));
        }
    }
}
