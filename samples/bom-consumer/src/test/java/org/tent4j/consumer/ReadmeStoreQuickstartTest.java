package org.tent4j.consumer;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;

import org.junit.jupiter.api.Test;

/** The README's store quickstart is this module's StoreQuickstart, as written (the module's package line aside). */
class ReadmeStoreQuickstartTest {
    private static final String FENCE = "```java\n";

    @Test
    void theReadmeBlockIsThisModulesSource() throws IOException {
        Path readme = Path.of("../../README.md");   // this module sits at samples/bom-consumer
        String text = Files.readString(readme);
        String block = null;
        for (int start = text.indexOf(FENCE); start >= 0 && block == null; start = text.indexOf(FENCE, start + 1)) {
            int end = text.indexOf("\n```", start + FENCE.length());
            assertTrue(end > start, "a ```java block of " + readme + " is not closed");
            String candidate = text.substring(start + FENCE.length(), end + 1);
            if (candidate.contains("public class StoreQuickstart ")) {
                block = candidate;
            }
        }
        assertTrue(block != null, readme + " has no ```java block with public class StoreQuickstart");
        String source = Files.readString(Path.of("src/main/java/org/tent4j/consumer/StoreQuickstart.java"));
        String pkg = "package org.tent4j.consumer;\n\n";
        assertTrue(source.startsWith(pkg), "StoreQuickstart.java starts with " + pkg);
        assertEquals(block, source.substring(pkg.length()), "README's StoreQuickstart against this module's");
    }
}
