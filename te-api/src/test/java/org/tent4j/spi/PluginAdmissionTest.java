package org.tent4j.spi;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.util.ArrayList;
import java.util.List;
import java.util.Optional;

import org.junit.jupiter.api.Test;

class PluginAdmissionTest {
    @Test
    void aProviderBuiltForANewerSpiIsRefusedNamingBothVersions() {
        assertEquals(Optional.of("built for transport SPI version 3, this runtime supports 1 to 2"), PluginAdmission.refusal("transport", 3, 2));
    }

    @Test
    void aProviderBuiltForThisSpiOrAnOlderOneIsAdmitted() {
        assertEquals(Optional.empty(), PluginAdmission.refusal("transport", 2, 2));
        assertEquals(Optional.empty(), PluginAdmission.refusal("transport", 1, 2));
    }

    @Test
    void aVersionBelowOneIsNoVersionAndIsRefused() {
        assertEquals(Optional.of("built for backend SPI version 0, this runtime supports 1 to 1"), PluginAdmission.refusal("backend", 0, 1));
    }

    @Test
    void orderIsOrderThenId() {
        record P(String id, int order) {
        }
        List<P> ps = new ArrayList<>(List.of(new P("c", 1000), new P("b", 5), new P("z", 1), new P("a", 5)));
        ps.sort(PluginAdmission.order(P::order, P::id));
        assertEquals(List.of("z", "a", "b", "c"), ps.stream().map(P::id).toList());
    }
}
