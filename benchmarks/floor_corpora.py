"""Write the generated corpora of ``benchmarks/floor_recall.py`` (deterministic: re-running rewrites the same files).

Two corpora, each with a ``dev`` split (the floor was designed on it) and a ``heldout`` split (other
topics, other names and places: never used to choose anything, scored once per design):

* ``floor_dialogue_<split>_{memories,queries}.jsonl`` — a person's past events as the archive (long
  event memories, two or three sentences, in Chinese and in English), and the current multi-turn
  dialogue as the query (``用户：`` / ``助手：`` or ``User:`` / ``Assistant:`` lines). Every topic
  happens twice in an archive, with another companion and place (the hard negative: same topic,
  other event); the dialogue names its companion or place in paraphrase. Queries in Chinese and
  English run against the Chinese and the English archive: ``zh``, ``en``, ``zh→en``, ``en→zh``.
  Unrelated dialogues (sharing everyday words such as 上次 / 朋友 / last time / friend) have no answer.
* ``floor_nearid_<split>_{memories,queries}.jsonl`` — many near-identical lessons (``writer N lesson
  J: 检查第J号接口的超时设置`` and its siblings about other settings, in both languages); a query asks
  for one setting (all its lessons are relevant) or one setting of one endpoint.

Run: .venv/bin/python benchmarks/floor_corpora.py
"""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

DATA = Path(__file__).resolve().parent / "data"

# (zh, en) companions and places per split: held-out uses none of the dev names
PEOPLE = {
    "dev": [
        ("妹妹李娜", "my sister Lina"),
        ("同事老王", "my colleague Wang"),
        ("大学室友陈晨", "my college roommate Chen"),
        ("表哥张伟", "my cousin Zhang Wei"),
        ("邻居刘阿姨", "our neighbour Mrs Liu"),
        ("女朋友小雨", "my girlfriend Xiaoyu"),
    ],
    "heldout": [
        ("弟弟周明", "my brother Zhou Ming"),
        ("老同学赵敏", "my old classmate Zhao Min"),
        ("领导孙总", "my boss Mr Sun"),
        ("舅舅黄海", "my uncle Huang Hai"),
        ("健身教练阿杰", "my gym coach Jie"),
        ("好朋友吴佳", "my best friend Wu Jia"),
    ],
}
PLACES = {
    "dev": [
        ("杭州", "Hangzhou"),
        ("成都", "Chengdu"),
        ("青岛", "Qingdao"),
        ("苏州", "Suzhou"),
        ("厦门", "Xiamen"),
        ("西安", "Xi'an"),
    ],
    "heldout": [
        ("昆明", "Kunming"),
        ("大连", "Dalian"),
        ("南京", "Nanjing"),
        ("桂林", "Guilin"),
        ("哈尔滨", "Harbin"),
        ("长沙", "Changsha"),
    ],
}
MONTHS = [
    ("三月", "March"),
    ("五月", "May"),
    ("七月", "July"),
    ("九月", "September"),
    ("十一月", "November"),
    ("一月", "January"),
]

# topic: (zh event, en event, zh dialogue, en dialogue); {p} companion, {c} place, {m} month
TOPICS: dict[str, list[tuple[str, str, str, str]]] = {
    "dev": [
        (
            "{m}我和{p}在{c}骑了一整天自行车，中途下了大雨，我们在路边的茶馆躲雨喝了龙井。回来后决定下次出门一定带雨衣，还买了新的车灯。",
            "In {m} I cycled all day around {c} with {p}. A heavy rain caught us halfway and we waited it out in a roadside tea house. Afterwards we agreed to always pack rain jackets and I bought a new bike light.",
            "用户：周末天气好像不错。\n助手：是啊，有什么计划吗？\n用户：想再去骑车，上次跟{p}骑到一半被雨淋了，这次要准备什么？",
            "User: The weekend looks sunny.\nAssistant: Nice, any plans?\nUser: I want to go cycling again. Last time with {p} we got soaked halfway, what should I bring this time?",
        ),
        (
            "{m}{p}来家里，我们一起包饺子，猪肉白菜馅调得太咸了，后来加了点香菇才好一些。{p}说下次要多放姜去腥。",
            "In {m} {p} came over and we made dumplings together. The pork and cabbage filling turned out too salty until we added mushrooms. {p} said next time we should add more ginger.",
            "用户：今晚想做点家常菜。\n助手：想做什么呢？\n用户：还是包饺子吧，上回和{p}调的馅太咸了，这次怎么调？",
            "User: I feel like home cooking tonight.\nAssistant: What do you have in mind?\nUser: Dumplings again. The filling I made with {p} was too salty, how should I season it this time?",
        ),
        (
            "{m}我在{c}看了牙医，补了两颗蛀牙，医生说我刷牙太用力，牙龈有点退缩，建议换软毛牙刷并且每半年洗一次牙。",
            "In {m} I saw a dentist in {c} and had two cavities filled. The dentist said I brush too hard and my gums are receding, and suggested a soft toothbrush and a cleaning every six months.",
            "用户：最近吃冷的牙有点酸。\n助手：多久了？\n用户：一个多月了，之前在{c}补过牙，医生还说过我刷牙的问题。",
            "User: My teeth hurt a bit with cold drinks lately.\nAssistant: For how long?\nUser: About a month. I had fillings done in {c} and the dentist said something about how I brush.",
        ),
        (
            "{m}我和{p}去{c}听了一场摇滚音乐会，站票区太挤，{p}差点中暑。我们约好以后只买看台座位，并且提前吃饭。",
            "In {m} {p} and I went to a rock concert in {c}. The standing area was packed and {p} nearly fainted from the heat. We agreed to only buy seats next time and to eat beforehand.",
            "用户：下个月有个乐队来巡演。\n助手：想去看吗？\n用户：想，但上次跟{p}去的时候太挤了，票怎么买比较好？",
            "User: A band is touring here next month.\nAssistant: Do you want to go?\nUser: Yes, but it was so crowded last time with {p}. What tickets should I get?",
        ),
        (
            "{m}我从{c}的老小区搬到了新公寓，搬家公司弄坏了一个书架，理赔拖了三周。{p}帮我打包，建议以后贵重物品自己搬并且拍照留证。",
            "In {m} I moved out of my old flat in {c} into a new apartment. The movers broke a bookshelf and the claim dragged on for three weeks. {p} helped me pack and said to carry valuables myself and take photos as proof.",
            "用户：我可能又要搬家了。\n助手：这次搬去哪里？\n用户：还没定，上次在{c}搬家的时候家具被弄坏了，这次要注意什么？",
            "User: I might have to move again.\nAssistant: Where to this time?\nUser: Not sure yet. When I moved in {c} the movers damaged my furniture, what should I watch out for?",
        ),
        (
            "{m}我去{c}一家互联网公司面试产品经理，二面被问到数据指标时答得不好。{p}帮我复盘，建议准备三个带数字的项目案例。",
            "In {m} I interviewed for a product manager job at a tech company in {c}. In the second round I stumbled on questions about metrics. {p} helped me review it and suggested preparing three project stories with numbers.",
            "用户：我下周又有一个面试。\n助手：什么岗位？\n用户：还是产品经理，上次在{c}栽在指标问题上，这次怎么准备？",
            "User: I have another interview next week.\nAssistant: What role?\nUser: Product manager again. Last time in {c} I failed on the metrics questions, how do I prepare?",
        ),
        (
            "{m}我从{c}的救助站领养了一只橘猫，取名团子。刚来时它躲在沙发底下两天不吃东西，兽医说要慢慢适应，先喂湿粮。",
            "In {m} I adopted an orange cat from a shelter in {c} and named her Tuanzi. She hid under the sofa for two days without eating, and the vet said to let her adjust slowly and start with wet food.",
            "用户：朋友想领养一只猫。\n助手：挺好的。\n用户：我当时在{c}领养团子的时候它两天不吃东西，该怎么跟朋友说？",
            "User: A friend wants to adopt a cat.\nAssistant: That's great.\nUser: When I adopted Tuanzi in {c} she didn't eat for two days. What should I tell my friend?",
        ),
        (
            "{m}我和{p}参加了{c}的半程马拉松，我在十五公里处小腿抽筋，最后走完全程。赛后才知道应该提前补盐并且别穿新鞋。",
            "In {m} {p} and I ran the {c} half marathon. My calf cramped at 15 km and I walked the rest. Afterwards I learned I should take salt beforehand and never race in new shoes.",
            "用户：我报名了今年的半马。\n助手：恭喜！\n用户：去年和{p}跑的时候我腿抽筋了，这次比赛前要注意什么？",
            "User: I signed up for a half marathon this year.\nAssistant: Congrats!\nUser: Last year running with {p} my leg cramped, what should I do before the race this time?",
        ),
        (
            "{m}我开始跟{p}学钢琴，每周练三次，左手总是跟不上节奏。{p}让我先用节拍器慢速练习，再分手练熟。",
            "In {m} I started piano lessons with {p}, practising three times a week, but my left hand kept falling behind. {p} told me to practise slowly with a metronome and hands separately first.",
            "用户：最近练琴没什么进步。\n助手：卡在哪里？\n用户：还是左手跟不上，{p}之前教过我一个办法，我忘了。",
            "User: My piano practice isn't improving.\nAssistant: Where are you stuck?\nUser: My left hand still can't keep up. {p} taught me a trick once but I forgot it.",
        ),
        (
            "{m}我去{c}参加了{p}的婚礼，当伴郎时忘带了戒指盒，幸好酒店前台帮忙找到了。之后我学会了前一晚把要带的东西列成清单。",
            "In {m} I went to {p}'s wedding in {c} and, as best man, forgot the ring box; the hotel front desk luckily found it. Since then I write a packing list the night before.",
            "用户：下个月我又要当伴郎了。\n助手：恭喜朋友！\n用户：上次在{c}的婚礼我差点把戒指弄丢了，这次怎么避免？",
            "User: I'm going to be a best man again next month.\nAssistant: Congrats to your friend!\nUser: At the wedding in {c} I almost lost the rings, how do I avoid that this time?",
        ),
    ],
    "heldout": [
        (
            "{m}我和{p}去{c}郊外露营，夜里气温降到零度，睡袋不够厚，几乎一夜没睡。后来我们买了零下十度的睡袋和防潮垫。",
            "In {m} {p} and I went camping outside {c}. At night it dropped to freezing and our sleeping bags were too thin, so we barely slept. Later we bought bags rated to minus ten and sleeping pads.",
            "用户：国庆想去露营。\n助手：去哪里？\n用户：还没想好，之前和{p}在{c}冻了一晚上，装备要怎么选？",
            "User: I want to go camping over the holiday.\nAssistant: Where?\nUser: Not sure. With {p} near {c} we froze all night, how should I choose the gear?",
        ),
        (
            "{m}我的车在{c}高速上爆胎，等了两个小时拖车。修车师傅说轮胎老化了，建议每五年换一次胎并且常查胎压。",
            "In {m} my car got a flat on the highway near {c} and I waited two hours for a tow. The mechanic said the tyres were old and I should replace them every five years and check the pressure often.",
            "用户：要开长途回老家。\n助手：路上注意安全。\n用户：上次在{c}高速上车胎爆了，出发前要检查哪些？",
            "User: I'm driving a long way home.\nAssistant: Drive safely.\nUser: Last time on the highway near {c} I had a blowout, what should I check before leaving?",
        ),
        (
            "{m}我在{c}报了一个摄影班，{p}是老师。夜景总是拍糊，{p}说要用三脚架、关掉防抖并且用两秒自拍延时。",
            "In {m} I took a photography class in {c} taught by {p}. My night shots kept coming out blurry; {p} said to use a tripod, turn off stabilisation and use the two-second timer.",
            "用户：想拍城市夜景。\n助手：用什么相机？\n用户：微单，以前{p}教过我拍夜景不糊的方法，再说一遍？",
            "User: I want to shoot the city at night.\nAssistant: Which camera?\nUser: A mirrorless. {p} once taught me how to keep night shots sharp, can you remind me?",
        ),
        (
            "{m}我陪{p}去{c}的医院做体检，挂号排了三个小时。护士建议以后用手机提前预约并且空腹早点去。",
            "In {m} I took {p} for a check-up at a hospital in {c} and we queued three hours to register. A nurse suggested booking online in advance and arriving early with an empty stomach.",
            "用户：下周要带家人去体检。\n助手：需要帮忙准备吗？\n用户：上次陪{p}去排了好久的队，这次怎么更快？",
            "User: I'm taking family for a check-up next week.\nAssistant: Need help preparing?\nUser: Last time with {p} we queued for ages, how can it go faster?",
        ),
        (
            "{m}我给{p}办了生日聚会，在{c}订的蛋糕送错了口味，还晚到了一小时。以后我都提前两天确认订单并且选离家近的店。",
            "In {m} I threw a birthday party for {p}. The cake I ordered in {c} came in the wrong flavour and an hour late. Now I confirm orders two days ahead and pick a shop close to home.",
            "用户：我想给朋友办个生日会。\n助手：需要什么？\n用户：蛋糕吧，上次给{p}订的蛋糕出了问题，这次要注意啥？",
            "User: I want to throw a birthday party for a friend.\nAssistant: What do you need?\nUser: A cake. The one I ordered for {p} went wrong, what should I watch for this time?",
        ),
        (
            "{m}我和{p}爬了{c}附近的一座山，下山时天黑了还迷了路，手机也没电。后来我们总是带头灯和充电宝，并且下午三点前开始下山。",
            "In {m} {p} and I hiked a mountain near {c}. It got dark on the way down, we got lost and my phone died. Since then we carry headlamps and a power bank and start down before three.",
            "用户：周末想去爬山。\n助手：哪座山？\n用户：还没定，上次和{p}下山时天黑迷路了，这次要带什么？",
            "User: Thinking of a hike this weekend.\nAssistant: Which mountain?\nUser: Not decided. Last time with {p} we got lost after dark on the way down, what should I bring?",
        ),
        (
            "{m}我在{c}参加语言交换，和{p}练口语，总是紧张说不出话。{p}建议我每次先准备三个话题并且录音回听。",
            "In {m} I joined a language exchange in {c} and practised speaking with {p}, but I froze every time. {p} suggested preparing three topics beforehand and recording myself to listen back.",
            "用户：我又报了一个口语角。\n助手：很好啊。\n用户：之前和{p}练的时候我一开口就紧张，有什么办法？",
            "User: I joined another conversation club.\nAssistant: Good for you.\nUser: When I practised with {p} I got nervous as soon as I spoke, any tips?",
        ),
        (
            "{m}我在{c}买了一台笔记本电脑，没注意内存只有八个G，跑程序经常卡。{p}说买电脑至少要十六G内存并且看清能否加装。",
            "In {m} I bought a laptop in {c} without noticing it had only 8 GB of memory, and it kept freezing. {p} said to get at least 16 GB and check whether memory can be added.",
            "用户：我想换台电脑。\n助手：预算多少？\n用户：五六千，上次在{c}买的那台总卡，这次配置怎么选？",
            "User: I want a new computer.\nAssistant: What's the budget?\nUser: Mid-range. The one I bought in {c} kept freezing, how should I pick the specs?",
        ),
        (
            "{m}我在{c}的图书馆做志愿者，和{p}一起整理儿童绘本。我们发现按颜色贴标签后孩子们更容易自己找书。",
            "In {m} I volunteered at a library in {c}, sorting children's picture books with {p}. We found that colour-coded labels helped the kids find books on their own.",
            "用户：社区让我帮忙整理图书角。\n助手：需要什么建议？\n用户：以前和{p}在图书馆弄过绘本，当时有个好办法。",
            "User: The community asked me to sort out the book corner.\nAssistant: Want some ideas?\nUser: I sorted picture books with {p} at a library once and we had a good trick.",
        ),
        (
            "{m}我和{p}去{c}海边钓鱼，一条也没钓到，后来渔民说要看潮汐表，涨潮前一小时最好。我们还学会了用活虾做饵。",
            "In {m} {p} and I went fishing on the coast near {c} and caught nothing. A fisherman told us to read the tide table, the hour before high tide is best, and to use live shrimp as bait.",
            "用户：下周想去海钓。\n助手：有经验吗？\n用户：和{p}去过一次，一条都没钓到，后来有人教了我们诀窍。",
            "User: Going sea fishing next week.\nAssistant: Any experience?\nUser: Once with {p}, caught nothing, then someone taught us a trick.",
        ),
    ],
}

UNRELATED = {
    "dev": [
        (
            "zh",
            "用户：帮我解释一下什么是量子纠缠。\n助手：简单说是两个粒子的状态相互关联。\n用户：能用更通俗的话讲讲吗？",
        ),
        ("zh", "用户：上次你推荐的那本书我看完了。\n助手：觉得怎么样？\n用户：还行，再推荐一本科幻小说吧。"),
        ("zh", "用户：我朋友问个税怎么算。\n助手：他月收入多少？\n用户：一万二，五险一金扣完以后要交多少税？"),
        ("zh", "用户：给我写一首关于秋天的诗。\n助手：好的，想要什么风格？\n用户：五言绝句就行。"),
        (
            "en",
            "User: Explain quantum entanglement to me.\nAssistant: Two particles share a linked state.\nUser: Can you say it more simply?",
        ),
        (
            "en",
            "User: I finished the book you recommended last time.\nAssistant: How was it?\nUser: Fine, recommend a science fiction novel.",
        ),
        (
            "en",
            "User: My friend asked how income tax works.\nAssistant: What is his salary?\nUser: Around five thousand a month, how much tax does he pay?",
        ),
        ("en", "User: Write me a poem about autumn.\nAssistant: Sure, any style?\nUser: A short haiku is fine."),
    ],
    "heldout": [
        ("zh", "用户：Python里的装饰器怎么写？\n助手：它是一个接收函数的函数。\n用户：给我一个计时的例子。"),
        ("zh", "用户：上次聊的那个电影叫什么来着？\n助手：你是说哪一部？\n用户：算了，帮我查一下明天的天气吧。"),
        ("zh", "用户：我同事问光合作用的原理。\n助手：植物利用光能合成有机物。\n用户：化学方程式是什么？"),
        ("zh", "用户：帮我把这句话翻译成日语。\n助手：哪句话？\n用户：谢谢你一直以来的照顾。"),
        (
            "en",
            "User: How do I write a decorator in Python?\nAssistant: It's a function that takes a function.\nUser: Show me a timing example.",
        ),
        (
            "en",
            "User: What was the film we talked about last time?\nAssistant: Which one do you mean?\nUser: Never mind, what's the weather tomorrow?",
        ),
        (
            "en",
            "User: My colleague asked how photosynthesis works.\nAssistant: Plants turn light into sugar.\nUser: What is the chemical equation?",
        ),
        (
            "en",
            "User: Translate a sentence into Japanese for me.\nAssistant: Which sentence?\nUser: Thank you for always looking after me.",
        ),
    ],
}

PERSONAS = 3
"""Personas per split: each lived every topic twice (another companion, place and month)."""


def dialogue(split: str) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The archive (one per language: ``archive`` names it) and the queries with their relevant events.

    Every persona's events go to one archive per language (60 long memories), so each topic happens
    six times; a dialogue's relevant events are those of its topic with the companion and place it
    names (the others of its topic are the hard negatives).
    """
    rng = random.Random(f"floor-dialogue-{split}")
    memories: list[dict[str, Any]] = []
    asked: list[tuple[str, int, str, str, str, str, str, str]] = []
    for persona in range(PERSONAS):
        for t, (zh_event, en_event, zh_dialogue, en_dialogue) in enumerate(TOPICS[split]):
            people = rng.sample(PEOPLE[split], 2)
            places = rng.sample(PLACES[split], 2)
            months = rng.sample(MONTHS, 2)
            for v in range(2):
                (pz, pe), (cz, ce), (mz, me) = people[v], places[v], months[v]
                key = f"{split}-p{persona}-t{t}-v{v}"
                for lang, text in (
                    ("zh", zh_event.format(p=pz, c=cz, m=mz)),
                    ("en", en_event.format(p=pe, c=ce, m=me)),
                ):
                    memories.append(
                        {
                            "id": f"{key}-{lang}",
                            "archive": lang,
                            "lang": lang,
                            "topic": t,
                            "person": pz,
                            "place": cz,
                            "content": text,
                        }
                    )
                if v == 0:  # one dialogue per topic and persona, about the first event
                    asked.append((key, t, pz, pe, cz, ce, zh_dialogue, en_dialogue))
    queries: list[dict[str, Any]] = []
    for key, t, pz, pe, cz, ce, zh_dialogue, en_dialogue in asked:
        for qlang, template in (("zh", zh_dialogue), ("en", en_dialogue)):
            text = template.format(p=pz if qlang == "zh" else pe, c=cz if qlang == "zh" else ce)
            for alang in ("zh", "en"):
                relevant = [
                    m["id"]
                    for m in memories
                    if m["lang"] == alang
                    and m["topic"] == t
                    and ("{p}" not in template or m["person"] == pz)
                    and ("{c}" not in template or m["place"] == cz)
                ]
                queries.append(
                    {
                        "id": f"{key}-q{qlang}-{alang}",
                        "archive": alang,
                        "form": "dialogue",  # a chat transcript (role turns), never stored
                        "slice": f"dialogue {qlang}" if qlang == alang else f"dialogue {qlang}→{alang}",
                        "query": text,
                        "relevant": relevant,
                    }
                )
    for u, (qlang, text) in enumerate(UNRELATED[split]):
        for alang in ("zh", "en"):
            queries.append(
                {
                    "id": f"{split}-u{u}-{alang}",
                    "archive": alang,
                    "form": "dialogue",
                    "slice": f"dialogue {qlang}" if qlang == alang else f"dialogue {qlang}→{alang}",
                    "query": text,
                    "relevant": [],
                }
            )
    return memories, queries


SETTINGS = {
    "dev": [
        ("超时设置", "timeout setting", "超时", "timeout"),
        ("日志级别", "log level", "日志", "logging"),
        ("重试次数", "retry count", "重试", "retries"),
    ],
    "heldout": [
        ("连接池大小", "connection pool size", "连接池", "connection pool"),
        ("缓存过期时间", "cache expiry", "缓存", "cache"),
        ("限流阈值", "rate limit", "限流", "rate limiting"),
    ],
}
UNRELATED_NEARID = {
    "dev": [("zh", "帮我写一份年终总结"), ("en", "plan a birthday dinner"), ("zh", "翻译这段合同条款")],
    "heldout": [("zh", "推荐几部纪录片"), ("en", "book a flight to Tokyo"), ("zh", "整理一下会议纪要")],
}


def near_identical(split: str) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Lessons that differ only in writer, endpoint and setting (zh and en), and the queries about them."""
    writers, endpoints = (6, 25) if split == "dev" else (5, 30)
    memories: list[dict[str, Any]] = []
    for n in range(1, writers + 1):
        for j in range(1, endpoints + 1):
            s = (n + j) % len(SETTINGS[split])
            zh, en, _, _ = SETTINGS[split][s]
            lang = "zh" if (n + 2 * j) % 3 else "en"
            text = (
                f"writer {n} lesson {j}: 检查第{j}号接口的{zh}"
                if lang == "zh"
                else f"writer {n} lesson {j}: check the {en} of endpoint {j}"
            )
            memories.append(
                {
                    "id": f"{split}-w{n}-l{j}",
                    "archive": "nearid",
                    "lang": lang,
                    "setting": s,
                    "endpoint": j,
                    "content": text,
                }
            )
    queries: list[dict[str, Any]] = []
    for s, (_, _, zh_word, en_word) in enumerate(SETTINGS[split]):
        for qlang, text in (("zh", f"接口{zh_word}"), ("en", f"endpoint {en_word}")):
            rel = [m["id"] for m in memories if m["setting"] == s]
            queries.append(
                {
                    "id": f"{split}-s{s}-{qlang}",
                    "archive": "nearid",
                    "slice": f"near-identical {qlang}",
                    "query": text,
                    "relevant": rel,
                }
            )
        for j in (3, 7, 12):
            rel = [m["id"] for m in memories if m["setting"] == s and m["endpoint"] == j]
            if not rel:
                continue
            for qlang, text in ((("zh", f"第{j}号接口{zh_word}有问题")), ("en", f"endpoint {j} {en_word} problem")):
                queries.append(
                    {
                        "id": f"{split}-s{s}-e{j}-{qlang}",
                        "archive": "nearid",
                        "slice": f"near-identical {qlang}",
                        "query": text,
                        "relevant": rel,
                    }
                )
    for u, (qlang, text) in enumerate(UNRELATED_NEARID[split]):
        queries.append(
            {
                "id": f"{split}-nu{u}",
                "archive": "nearid",
                "slice": f"near-identical {qlang}",
                "query": text,
                "relevant": [],
            }
        )
    return memories, queries


def write(name: str, rows: list[dict[str, Any]]) -> None:
    with (DATA / name).open("w", encoding="utf-8") as f:
        for row in rows:
            f.write(json.dumps(row, ensure_ascii=False) + "\n")


def main() -> None:
    for split in ("dev", "heldout"):
        for stem, build in (("dialogue", dialogue), ("nearid", near_identical)):
            memories, queries = build(split)
            write(f"floor_{stem}_{split}_memories.jsonl", memories)
            write(f"floor_{stem}_{split}_queries.jsonl", queries)
            print(f"floor_{stem}_{split}: {len(memories)} memories, {len(queries)} queries")


if __name__ == "__main__":
    main()
