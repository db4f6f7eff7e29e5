// save_schedule_file writes a file or nothing: a device, a FIFO or a folder at the path is
// refused before anything is written (a rename over /dev/full would replace the device), and a
// symlink keeps pointing at the file it names.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "lazyllm/schedule.h"
#include "prune/schedule_file_fixture.h"

namespace lazyllm::prune {
namespace {

Schedule two_cuts() {
    Schedule s;
    s.boundaries = {3, 12};
    s.keep = {0.5f, 0.2f};
    return s;
}

TEST_F(ScheduleFileTest, SaveNeverReplacesWhatIsNotAFile) {
    namespace fs = std::filesystem;
    const std::string fifo = path("pipe");
    ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
    for (const std::string& p : {fifo, dir_.string(), std::string()}) {
        const Status st = save_schedule_file(p, two_cuts(), ScheduleFileInfo{});
        ASSERT_FALSE(st.ok()) << p;
        EXPECT_EQ(st.error().code(), ErrorCode::kInvalidArgument) << st.error().message();
        EXPECT_FALSE(check_schedule_path(p).ok()) << p;
    }
    EXPECT_TRUE(fs::is_fifo(fifo));
    EXPECT_FALSE(fs::exists(fifo + ".tmp"));
    EXPECT_TRUE(check_schedule_path(path("new.json")).ok());
    // Through a symlink: the target takes the schedule, the link stays a link.
    const std::string target = write("target.json", "old");
    const std::string link = path("link.json");
    fs::create_symlink(target, link);
    ASSERT_TRUE(save_schedule_file(link, two_cuts(), ScheduleFileInfo{}).ok());
    EXPECT_TRUE(fs::is_symlink(link));
    std::ostringstream text;
    text << std::ifstream(target).rdbuf();
    EXPECT_NE(text.str().find("\"layers\""), std::string::npos) << text.str();
    auto back = load_schedule_file(link, 30);
    ASSERT_TRUE(back.ok()) << back.error().message();
    EXPECT_EQ(back->boundaries, two_cuts().boundaries);
    // A symlink to nothing is refused and stays as it is.
    const std::string dangling = path("dangling.json");
    fs::create_symlink(path("nowhere.json"), dangling);
    const Status st = save_schedule_file(dangling, two_cuts(), ScheduleFileInfo{});
    ASSERT_FALSE(st.ok());
    EXPECT_NE(st.error().message().find("which does not exist"), std::string::npos)
        << st.error().message();
    EXPECT_TRUE(fs::is_symlink(dangling));
    EXPECT_FALSE(fs::exists(path("nowhere.json")));
}

}  // namespace
}  // namespace lazyllm::prune
