package kiggy.ecosystem;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;

import org.apache.kafka.common.config.ConfigDef;
import org.apache.kafka.connect.connector.Task;
import org.apache.kafka.connect.sink.SinkConnector;

/**
 * FileSinkConnector is a Kafka Connect sink connector for kiggy's ecosystem
 * tests (tests/ecosystem): its one task (FileSinkTask) appends each record
 * it is given to "file" as one line, "TOPIC/PARTITION/OFFSET TAB KEY TAB
 * VALUE", flushed after every put and synced when Connect commits offsets.
 */
public final class FileSinkConnector extends SinkConnector {
    static final String FILE = "file";

    static final ConfigDef CONFIG = new ConfigDef()
        .define(FILE, ConfigDef.Type.STRING, ConfigDef.Importance.HIGH, "file to append to");

    private Map<String, String> props;

    @Override
    public void start(Map<String, String> props) {
        CONFIG.parse(props);
        this.props = props;
    }

    @Override
    public Class<? extends Task> taskClass() {
        return FileSinkTask.class;
    }

    @Override
    public List<Map<String, String>> taskConfigs(int maxTasks) {
        List<Map<String, String>> out = new ArrayList<>();
        out.add(props);
        return out;
    }

    @Override
    public void stop() {}

    @Override
    public ConfigDef config() {
        return CONFIG;
    }

    @Override
    public String version() {
        return "1";
    }
}
