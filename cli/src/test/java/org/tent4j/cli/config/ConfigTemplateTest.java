package org.tent4j.cli.config;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Properties;
import java.util.stream.Collectors;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.tent4j.api.EngineConfig;
import org.tent4j.api.TransferEngine;
import org.tent4j.spi.EngineOptions;
import org.tent4j.spi.OptionSpec;
import org.tent4j.spi.TransportProvider;
import org.tent4j.cli.doctor.Doctor;

class ConfigTemplateTest {
    @TempDir
    Path dir;

    @Test
    void namesEveryEngineAndTransportKeyWithItsDefault() throws Exception {
        String template = ConfigTemplateCommand.template();
        Properties keys = uncommented(template);
        for (EngineOptions e : Doctor.load(EngineOptions.class).providers()) {
            for (OptionSpec o : e.options()) {
                assertEquals(o.defaultValue(), keys.getProperty(o.name()), o.name());
            }
        }
        for (TransportProvider p : Doctor.load(TransportProvider.class).providers()) {
            for (OptionSpec o : p.options()) {
                assertEquals(o.defaultValue(), keys.getProperty("transports." + p.id() + "." + o.name()), p.id() + " " + o.name());
            }
        }
        assertTrue(keys.containsKey("transfer.timeout") && keys.containsKey("transports.tcp.lanes"), keys.toString());
    }

    /** Every line set as written is a configuration the engine accepts: no key in it is unknown, no default refused. */
    @Test
    void everyLineUncommentedIsAConfigurationTheEngineAccepts() throws Exception {
        Path file = dir.resolve("tent4j.properties");
        Files.writeString(file, ConfigTemplateCommand.template().lines()
                .map(l -> l.matches("#[a-z].*=.*") ? l.substring(1) : l).collect(Collectors.joining("\n")));
        EngineConfig config = EngineConfig.builder().environment(java.util.Map.of()).file(file)
                .set(EngineConfig.CONTROL_HOST, "127.0.0.1").build();
        try (TransferEngine engine = TransferEngine.create(config)) {
            assertTrue(engine.transports().stream().anyMatch(t -> t.id().equals("tcp") && t.enabled()));
        }
    }

    private static Properties uncommented(String template) throws Exception {
        Properties p = new Properties();
        List<String> lines = template.lines().filter(l -> l.matches("#[a-z].*=.*")).map(l -> l.substring(1)).toList();
        p.load(new java.io.StringReader(String.join("\n", lines)));
        return p;
    }
}
