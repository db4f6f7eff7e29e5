// LongBench v1 per-dataset configuration as C++ data: prompt templates, max new tokens, metric,
// chat rule, first-line scoring and stop token.
//
// Sources (THUDM/LongBench, MIT License):
// - Templates: config/dataset2prompt.json at commit 8ae23fd444b0ed5837e993fb8d764f70b388c568,
//   copied verbatim (4,979 characters; lines are split into adjacent literals only).
// - Max new tokens: config/dataset2maxlen.json of the v1 release (21 datasets). The copy at commit
//   f6227eb7a25cacbd96310aea2c59af003f8d8925 predates multi_news (512), samsum (128) and
//   passage_retrieval_en / _zh (32); those values are the v1 release's.
// - Metric: eval.py dataset2metric (LongBench/eval.py at 072a5a739b05ab3c98ff1ea922c5293ebe317b75).
// - Chat: pred.py builds the chat prompt except for trec, triviaqa, samsum, lsht, lcc, repobench-p.
// - First line: eval.py scores prediction.lstrip('\n').split('\n')[0] for trec, triviaqa, samsum,
//   lsht.
// - Stop: pred.py passes eos_token_id=[eos, id of "\n"] for samsum only (with min_length one token
//   past the prompt, so the first generated token cannot end it).
// The Chinese datasets other than lsht use jieba in their metrics (qa_f1_zh, rouge_zh) or the
// "段落N" pattern (retrieval_zh); they are listed for completeness and marked unsupported.
#pragma once

#include <array>
#include <string_view>

#include "eval/task.h"

namespace lazyllm::eval::longbench {

inline constexpr std::string_view kNarrativeqaPrompt =
    "You are given a story, which can be either a novel or a movie script, and a "
    "question. Answer the question as concisely as you can, using a single phrase if "
    "possible. Do not provide any explanation.\n"
    "\n"
    "Story: {context}\n"
    "\n"
    "Now, answer the question based on the story as concisely as you can, using a "
    "single phrase if possible. Do not provide any explanation.\n"
    "\n"
    "Question: {input}\n"
    "\n"
    "Answer:";

inline constexpr std::string_view kQasperPrompt =
    "You are given a scientific article and a question. Answer the question as "
    "concisely as you can, using a single phrase or sentence if possible. If the "
    "question cannot be answered based on the information in the article, write "
    "\"unanswerable\". If the question is a yes/no question, answer \"yes\", \"no\", or "
    "\"unanswerable\". Do not provide any explanation.\n"
    "\n"
    "Article: {context}\n"
    "\n"
    " Answer the question based on the above article as concisely as you can, using "
    "a single phrase or sentence if possible. If the question cannot be answered "
    "based on the information in the article, write \"unanswerable\". If the question "
    "is a yes/no question, answer \"yes\", \"no\", or \"unanswerable\". Do not provide any "
    "explanation.\n"
    "\n"
    "Question: {input}\n"
    "\n"
    "Answer:";

inline constexpr std::string_view kMultifieldqaEnPrompt =
    "Read the following text and answer briefly.\n"
    "\n"
    "{context}\n"
    "\n"
    "Now, answer the following question based on the above text, only give me the "
    "answer and do not output any other words.\n"
    "\n"
    "Question: {input}\n"
    "Answer:";

inline constexpr std::string_view kMultifieldqaZhPrompt =
    "阅读以下文字并用中文简短回答：\n"
    "\n"
    "{context}\n"
    "\n"
    "现在请基于上面的文章回答下面的问题，只告诉我答案，不要输出任何其他字词。\n"
    "\n"
    "问题：{input}\n"
    "回答：";

inline constexpr std::string_view kHotpotqaPrompt =
    "Answer the question based on the given passages. Only give me the answer and do "
    "not output any other words.\n"
    "\n"
    "The following are given passages.\n"
    "{context}\n"
    "\n"
    "Answer the question based on the given passages. Only give me the answer and do "
    "not output any other words.\n"
    "\n"
    "Question: {input}\n"
    "Answer:";

inline constexpr std::string_view kTwoWikiMqaPrompt =
    "Answer the question based on the given passages. Only give me the answer and do "
    "not output any other words.\n"
    "\n"
    "The following are given passages.\n"
    "{context}\n"
    "\n"
    "Answer the question based on the given passages. Only give me the answer and do "
    "not output any other words.\n"
    "\n"
    "Question: {input}\n"
    "Answer:";

inline constexpr std::string_view kMusiquePrompt =
    "Answer the question based on the given passages. Only give me the answer and do "
    "not output any other words.\n"
    "\n"
    "The following are given passages.\n"
    "{context}\n"
    "\n"
    "Answer the question based on the given passages. Only give me the answer and do "
    "not output any other words.\n"
    "\n"
    "Question: {input}\n"
    "Answer:";

inline constexpr std::string_view kDureaderPrompt =
    "请基于给定的文章回答下述问题。\n"
    "\n"
    "文章：{context}\n"
    "\n"
    "请基于上述文章回答下面的问题。\n"
    "\n"
    "问题：{input}\n"
    "回答：";

inline constexpr std::string_view kGovReportPrompt =
    "You are given a report by a government agency. Write a one-page summary of the "
    "report.\n"
    "\n"
    "Report:\n"
    "{context}\n"
    "\n"
    "Now, write a one-page summary of the report.\n"
    "\n"
    "Summary:";

inline constexpr std::string_view kQmsumPrompt =
    "You are given a meeting transcript and a query containing a question or "
    "instruction. Answer the query in one or more sentences.\n"
    "\n"
    "Transcript:\n"
    "{context}\n"
    "\n"
    "Now, answer the query based on the above meeting transcript in one or more "
    "sentences.\n"
    "\n"
    "Query: {input}\n"
    "Answer:";

inline constexpr std::string_view kMultiNewsPrompt =
    "You are given several news passages. Write a one-page summary of all news. \n"
    "\n"
    "News:\n"
    "{context}\n"
    "\n"
    "Now, write a one-page summary of all the news.\n"
    "\n"
    "Summary:";

inline constexpr std::string_view kVcsumPrompt =
    "下面有一段会议记录，请你阅读后，写一段总结，总结会议的内容。\n"
    "会议记录：\n"
    "{context}\n"
    "\n"
    "会议总结：";

inline constexpr std::string_view kTrecPrompt =
    "Please determine the type of the question below. Here are some examples of "
    "questions.\n"
    "\n"
    "{context}\n"
    "{input}";

inline constexpr std::string_view kTriviaqaPrompt =
    "Answer the question based on the given passage. Only give me the answer and do "
    "not output any other words. The following are some examples.\n"
    "\n"
    "{context}\n"
    "\n"
    "{input}";

inline constexpr std::string_view kSamsumPrompt =
    "Summarize the dialogue into a few short sentences. The following are some "
    "examples.\n"
    "\n"
    "{context}\n"
    "\n"
    "{input}";

inline constexpr std::string_view kLshtPrompt =
    "请判断给定新闻的类别，下面是一些例子。\n"
    "\n"
    "{context}\n"
    "{input}";

inline constexpr std::string_view kPassageCountPrompt =
    "There are some paragraphs below sourced from Wikipedia. Some of them may be "
    "duplicates. Please carefully read these paragraphs and determine how many "
    "unique paragraphs there are after removing duplicates. In other words, how many "
    "non-repeating paragraphs are there in total?\n"
    "\n"
    "{context}\n"
    "\n"
    "Please enter the final count of unique paragraphs after removing duplicates. "
    "The output format should only contain the number, such as 1, 2, 3, and so on.\n"
    "\n"
    "The final answer is: ";

inline constexpr std::string_view kPassageRetrievalEnPrompt =
    "Here are 30 paragraphs from Wikipedia, along with an abstract. Please determine "
    "which paragraph the abstract is from.\n"
    "\n"
    "{context}\n"
    "\n"
    "The following is an abstract.\n"
    "\n"
    "{input}\n"
    "\n"
    "Please enter the number of the paragraph that the abstract is from. The answer "
    "format must be like \"Paragraph 1\", \"Paragraph 2\", etc.\n"
    "\n"
    "The answer is: ";

inline constexpr std::string_view kPassageRetrievalZhPrompt =
    "以下是若干段落文字，以及其中一个段落的摘要。请确定给定的摘要出自哪一段。\n"
    "\n"
    "{context}\n"
    "\n"
    "下面是一个摘要\n"
    "\n"
    "{input}\n"
    "\n"
    "请输入摘要所属段落的编号。答案格式必须是\"段落1\"，\"段落2\"等格式\n"
    "\n"
    "答案是：";

inline constexpr std::string_view kLccPrompt =
    "Please complete the code given below. \n"
    "{context}Next line of code:\n";

inline constexpr std::string_view kRepobenchPPrompt =
    "Please complete the code given below. \n"
    "{context}{input}Next line of code:\n";

struct DatasetConfig {
    std::string_view name;
    std::string_view prompt;  // Python str.format template with {context} and {input}
    int max_new_tokens;
    Metric metric;
    bool chat;
    bool first_line_only;
    std::string_view stop_token;  // Sample::stop_token, "" for none
    bool supported;         // false: the metric needs jieba or a Chinese pattern
};

inline constexpr std::array<DatasetConfig, 21> kDatasets = {{
    {"narrativeqa", kNarrativeqaPrompt, 128, Metric::kQaF1, true, false, "", true},
    {"qasper", kQasperPrompt, 128, Metric::kQaF1, true, false, "", true},
    {"multifieldqa_en", kMultifieldqaEnPrompt, 64, Metric::kQaF1, true, false, "", true},
    {"multifieldqa_zh", kMultifieldqaZhPrompt, 64, Metric::kQaF1, true, false, "", false},
    {"hotpotqa", kHotpotqaPrompt, 32, Metric::kQaF1, true, false, "", true},
    {"2wikimqa", kTwoWikiMqaPrompt, 32, Metric::kQaF1, true, false, "", true},
    {"musique", kMusiquePrompt, 32, Metric::kQaF1, true, false, "", true},
    {"dureader", kDureaderPrompt, 128, Metric::kRougeL, true, false, "", false},
    {"gov_report", kGovReportPrompt, 512, Metric::kRougeL, true, false, "", true},
    {"qmsum", kQmsumPrompt, 512, Metric::kRougeL, true, false, "", true},
    {"multi_news", kMultiNewsPrompt, 512, Metric::kRougeL, true, false, "", true},
    {"vcsum", kVcsumPrompt, 512, Metric::kRougeL, true, false, "", false},
    {"trec", kTrecPrompt, 64, Metric::kClassification, false, true, "", true},
    {"triviaqa", kTriviaqaPrompt, 32, Metric::kQaF1, false, true, "", true},
    {"samsum", kSamsumPrompt, 128, Metric::kRougeL, false, true, "\n", true},
    {"lsht", kLshtPrompt, 64, Metric::kClassification, false, true, "", true},
    {"passage_count", kPassageCountPrompt, 32, Metric::kCount, true, false, "", true},
    {"passage_retrieval_en", kPassageRetrievalEnPrompt, 32, Metric::kRetrieval, true, false, "",
     true},
    {"passage_retrieval_zh", kPassageRetrievalZhPrompt, 32, Metric::kRetrieval, true, false, "",
     false},
    {"lcc", kLccPrompt, 64, Metric::kCodeSim, false, false, "", true},
    {"repobench-p", kRepobenchPPrompt, 64, Metric::kCodeSim, false, false, "", true},
}};

}  // namespace lazyllm::eval::longbench
