package org.tent4j.samples.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.PrintWriter;
import java.io.StringWriter;
import java.util.Enumeration;
import java.util.List;
import java.net.URL;

import org.junit.jupiter.api.Test;

import picocli.CommandLine;

class Tent4jCommandTest {

    private static String[] run(int expectedStatus, String... args) {
        StringWriter out = new StringWriter();
        StringWriter err = new StringWriter();
        CommandLine cl = Tent4jCommand.commandLine();
        cl.setOut(new PrintWriter(out, true));
        cl.setErr(new PrintWriter(err, true));
        assertEquals(expectedStatus, cl.execute(args), () -> "out:\n" + out + "\nerr:\n" + err);
        return new String[]{out.toString(), err.toString()};
    }

    @Test
    void listsItsSubcommands() {
        String out = run(0, "--help")[0];
        assertTrue(out.contains("doctor"), out);
        assertTrue(out.contains("metadata-server"), out);
        assertTrue(out.contains("te-bench"), out);
    }

    @Test
    void doctorIsASubcommand() {
        assertTrue(run(0, "doctor", "--no-options")[0].contains("transports ("));
    }

    @Test
    void benchFlagsWorkThroughTheSubcommand() {
        String err = run(2, "te-bench", "--mode=initiator")[1];
        assertTrue(err.contains("--segment_id is required"), err);
    }

    @Test
    void metadataServerPassesEveryArgumentThrough() {
        String before = MetadataServerCommand.serverClass;
        try {
            MetadataServerCommand.serverClass = RecordingServer.class.getName();
            run(0, "metadata-server", "--port", "18080", "--host=127.0.0.1", "extra");
            assertEquals(List.of("--port", "18080", "--host=127.0.0.1", "extra"), RecordingServer.lastArgs);
        } finally {
            MetadataServerCommand.serverClass = before;
        }
    }

    @Test
    void metadataServerMissingIsASetupError() {
        String before = MetadataServerCommand.serverClass;
        try {
            MetadataServerCommand.serverClass = "org.tent4j.samples.cli.NoSuchServer";
            String err = run(3, "metadata-server", "--port", "1")[1];
            assertTrue(err.contains("org.tent4j.samples.cli.NoSuchServer"), err);
            assertTrue(err.contains("metadata-http"), err);
        } finally {
            MetadataServerCommand.serverClass = before;
        }
    }

    @Test
    void jmhBenchmarksWereGenerated() throws Exception {
        // javac 23+ skips class-path annotation processors silently; this fails if the pom loses the processor path
        Enumeration<URL> lists = getClass().getClassLoader().getResources("META-INF/BenchmarkList");
        StringBuilder all = new StringBuilder();
        while (lists.hasMoreElements()) {
            try (var in = lists.nextElement().openStream()) {
                all.append(new String(in.readAllBytes()));
            }
        }
        assertTrue(all.toString().contains("org.tent4j.samples.jmh.LoopbackTransferBenchmark"), all.toString());
    }

    public static final class RecordingServer {
        static volatile List<String> lastArgs;

        public static void main(String[] args) {
            lastArgs = List.of(args);
        }
    }
}
