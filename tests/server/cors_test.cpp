// serve --cors-origins: the list parsed, and the Access-Control-Allow-Origin value per Origin.
#include "server/cors.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace lazyllm::server {
namespace {

TEST(CorsOrigins, AnyNoneOrAList) {
    EXPECT_EQ(parse_cors_origins("*").value(), std::vector<std::string>{"*"});
    EXPECT_TRUE(parse_cors_origins(" none ").value().empty());
    EXPECT_EQ(parse_cors_origins("http://localhost:3000, https://Chat.example,null").value(),
              (std::vector<std::string>{"http://localhost:3000", "https://Chat.example", "null"}));
}

TEST(CorsOrigins, AnEntryThatIsNoOriginIsNamed) {
    for (const char* bad : {"localhost:3000", "http://a.example/path", "http://", "*,http://a.b",
                            "http://a.b,", "ftp://a.b", "http://*.example", ""}) {
        auto r = parse_cors_origins(bad);
        ASSERT_FALSE(r.ok()) << bad;
        EXPECT_NE(r.error().message().find("is not an origin"), std::string::npos) << bad;
    }
    EXPECT_NE(parse_cors_origins("http://a.b,localhost").error().message().find("'localhost'"),
              std::string::npos);
}

TEST(CorsOrigins, AllowOriginPerRequest) {
    const std::vector<std::string> any = {"*"};
    const std::vector<std::string> listed = {"http://localhost:3000", "https://chat.example"};
    EXPECT_EQ(cors_allow_origin(any, "http://page.example"), "*");
    EXPECT_EQ(cors_allow_origin(any, ""), "");  // not a cross-origin request
    EXPECT_EQ(cors_allow_origin(listed, "https://CHAT.example"), "https://CHAT.example");
    EXPECT_EQ(cors_allow_origin(listed, "http://localhost:3001"), "");
    EXPECT_EQ(cors_allow_origin(listed, "http://localhost:3000/"), "");
    EXPECT_EQ(cors_allow_origin({}, "http://localhost:3000"), "");
}

}  // namespace
}  // namespace lazyllm::server
