package org.tent4j.testkit.conformance;

import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

import org.junit.jupiter.api.Test;
import org.tent4j.spi.Availability;
import org.tent4j.spi.OptionSpec;
import org.tent4j.spi.OptionValues;
import org.tent4j.spi.TransportCapabilities;
import org.tent4j.spi.TransportProvider;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The plugin itself: id, availability, options and capabilities make sense. */
abstract class PluginCases extends ConformanceHarness {
    // ------------------------------------------------------------------------------------------------ the plugin

    @Test
    void providerIdIsCanonical() {
        String id = provider().id();
        assertNotNull(id, "provider id is null");
        assertTrue(id.matches("[a-z][a-z0-9_-]*"), () -> "provider id '" + id
                + "' is not canonical: lower case letters, digits, '-' and '_', starting with a letter");
        assertFalse(provider().description() == null || provider().description().isBlank(),
                "description() is blank; tent4j doctor prints it");
    }

    @Test
    void availabilityIsAvailableOrNamesACause() {
        TransportProvider p = provider();
        Availability plain = p.availability();
        assertNotNull(plain, "availability() returned null");
        Availability configured = p.availability(parsedOptions());
        assertNotNull(configured, "availability(OptionValues) returned null");
        for (Availability av : List.of(plain, configured)) {
            if (!av.isAvailable()) {
                assertNotNull(av.unavailabilityCause(), "unavailable without a cause");
                assertFalse(av.reason() == null || av.reason().isBlank(), "unavailable, but the cause says nothing: "
                        + av.unavailabilityCause());
            }
        }
        assertEquals(plain.isAvailable(), p.availability().isAvailable(),
                "availability() changed between two calls; probe once and keep the answer");
    }

    @Test
    void optionsHaveParsableDefaultsAndDescriptions() {
        List<OptionSpec> specs = provider().options();
        assertNotNull(specs, "options() returned null; return List.of() when there are none");
        Set<String> names = new HashSet<>();
        for (OptionSpec s : specs) {
            assertTrue(s.name().matches("[a-z][a-z0-9_.]*"), () -> "option name '" + s.name()
                    + "' is not lower_snake_case");
            assertTrue(names.add(s.name()), () -> "option '" + s.name() + "' is declared twice");
            assertFalse(s.description() == null || s.description().isBlank(), () -> "option '" + s.name()
                    + "' has no description; tent4j doctor and the docs print it");
        }
        String prefix = "transports." + provider().id() + ".";
        OptionValues.parse(prefix, specs, Map.of()); // every default must parse as its declared type
        parsedOptions();
    }

    @Test
    void capabilitiesAreSane() {
        assertSane(provider().capabilities(), "provider capabilities()");
        TransportUnderTest side = a();
        assertEquals(provider().id(), side.transport.id(), "the transport's id() differs from its provider's");
        side.transport.capabilities().ifPresent(c -> assertSane(c, "transport capabilities()"));
    }

    private static void assertSane(TransportCapabilities c, String what) {
        assertNotNull(c, what + " is null");
        assertFalse(c.memoryPaths().isEmpty(), what + " declares no memory path; the runtime would never select it");
        assertTrue(c.maxSliceSize() > 0, what + " maxSliceSize must be > 0");
        assertTrue(c.rank() >= 0, what + " rank must be >= 0");
    }
}
