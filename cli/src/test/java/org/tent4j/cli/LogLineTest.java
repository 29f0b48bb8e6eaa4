package org.tent4j.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import ch.qos.logback.classic.Level;
import ch.qos.logback.classic.LoggerContext;
import ch.qos.logback.classic.PatternLayout;
import ch.qos.logback.classic.spi.LoggingEvent;
import org.junit.jupiter.api.Test;

/**
 * The commands' log pattern (the distribution's logback.xml): a message that quotes line breaks, as a peer's name or
 * a key can, stays one line, so nobody who chooses such a value can forge a log line (issue 29).
 */
class LogLineTest {
    @Test
    void aMessageQuotingLineBreaksStaysOneLine() throws Exception {
        String xml;
        try (InputStream in = Tent4jCommand.class.getResourceAsStream("/logback.xml")) {
            xml = new String(in.readAllBytes(), StandardCharsets.UTF_8);
        }
        Matcher m = Pattern.compile("<pattern>(.*)</pattern>").matcher(xml);
        assertTrue(m.find(), xml);
        LoggerContext ctx = new LoggerContext();
        PatternLayout layout = new PatternLayout();
        layout.setContext(ctx);
        layout.setPattern(m.group(1));
        layout.start();
        LoggingEvent e = new LoggingEvent("x", ctx.getLogger("t"), Level.WARN, "refusing '{}' from a peer", null,
                new Object[] {"evil\nEXPIRED forged\r\nWARN too"});
        String line = layout.doLayout(e);
        assertEquals(1, line.lines().count(), line);
        assertTrue(line.contains("refusing 'evil\\nEXPIRED forged\\r\\nWARN too' from a peer"), line);
    }
}
