/**
 * Word lists the FACT rules consult: occupations, relations, languages, places and words that look
 * like names but are not. Small and explicit on purpose: a list says what the offline extractor
 * recognises, and a miss is visible in the benchmark rather than hidden in a model.
 */

/** English occupation heads: "I'm a (high school) teacher" is an occupation when its last word is here. */
export const EN_OCCUPATIONS: ReadonlySet<string> = new Set(
  (
    'engineer developer programmer coder designer nurse doctor physician surgeon dentist pharmacist teacher ' +
    'professor lecturer tutor lawyer attorney paralegal accountant auditor scientist researcher analyst manager ' +
    'consultant chef cook baker barista waiter waitress bartender student undergrad postdoc writer author ' +
    'journalist reporter editor artist painter illustrator musician singer photographer architect electrician ' +
    'plumber carpenter mechanic technician driver pilot firefighter officer soldier therapist psychologist ' +
    'psychiatrist counselor counsellor worker salesperson marketer entrepreneur founder ceo cto cfo freelancer ' +
    'contractor translator interpreter librarian cashier clerk farmer vet veterinarian paramedic intern producer ' +
    'director economist banker trader recruiter secretary assistant administrator admin coach trainer nanny ' +
    'caregiver retiree homemaker housewife househusband actor actress dancer animator programmer physicist ' +
    'chemist biologist mathematician statistician sysadmin specialist representative rep agent broker ' +
    'realtor investor owner lead principal nutritionist dietitian optometrist radiologist midwife janitor ' +
    'electrician guard detective policeman policewoman cop sailor scholar phd candidate'
  ).split(/\s+/u),
);

/** Chinese occupation words: a phrase ending in one of them is an occupation. */
export const ZH_OCCUPATIONS: readonly string[] = [
  '老师',
  '教师',
  '教授',
  '医生',
  '大夫',
  '护士',
  '程序员',
  '工程师',
  '架构师',
  '设计师',
  '开发',
  '前端',
  '后端',
  '测试',
  '运维',
  '产品经理',
  '项目经理',
  '经理',
  '总监',
  '主管',
  '学生',
  '大学生',
  '研究生',
  '博士生',
  '硕士生',
  '高中生',
  '律师',
  '会计',
  '审计',
  '销售',
  '记者',
  '编辑',
  '作家',
  '厨师',
  '司机',
  '警察',
  '公务员',
  '科学家',
  '研究员',
  '分析师',
  '运营',
  '客服',
  '主播',
  '自由职业者',
  '创业者',
  '店主',
  '农民',
  '工人',
  '军人',
  '演员',
  '歌手',
  '画家',
  '摄影师',
  '翻译',
  '咨询师',
  '药剂师',
  '牙医',
  '兽医',
  '保安',
  '快递员',
  '外卖员',
  '全职妈妈',
  '宝妈',
  '实习生',
  '咨询顾问',
  '顾问',
  '建筑师',
  '飞行员',
  '空姐',
  '导游',
  '心理咨询师',
  '数据分析师',
  '算法工程师',
  '老板',
  '职员',
  '文员',
  '秘书',
  '助理',
  '教练',
  '律师助理',
  '理发师',
  '退休',
];

/** A relation as said, mapped to its canonical English name (the key segment). */
export const EN_RELATIONS: Readonly<Record<string, string>> = {
  wife: 'wife',
  husband: 'husband',
  spouse: 'spouse',
  partner: 'partner',
  boyfriend: 'boyfriend',
  girlfriend: 'girlfriend',
  fiance: 'partner',
  fiancé: 'partner',
  fiancee: 'partner',
  fiancée: 'partner',
  mom: 'mother',
  mum: 'mother',
  mother: 'mother',
  dad: 'father',
  father: 'father',
  son: 'son',
  daughter: 'daughter',
  kid: 'child',
  child: 'child',
  baby: 'child',
  brother: 'brother',
  sister: 'sister',
  friend: 'friend',
  'best friend': 'friend',
  colleague: 'colleague',
  coworker: 'colleague',
  'co-worker': 'colleague',
  boss: 'boss',
  manager: 'boss',
  roommate: 'roommate',
  flatmate: 'roommate',
  grandma: 'grandmother',
  grandmother: 'grandmother',
  grandpa: 'grandfather',
  grandfather: 'grandfather',
  aunt: 'aunt',
  uncle: 'uncle',
  cousin: 'cousin',
  niece: 'niece',
  nephew: 'nephew',
  dog: 'dog',
  puppy: 'dog',
  cat: 'cat',
  kitten: 'cat',
  therapist: 'therapist',
  mentor: 'mentor',
};

/** Chinese relation words → canonical English relation. Longer words first where they overlap. */
export const ZH_RELATIONS: readonly (readonly [word: string, relation: string])[] = [
  ['男朋友', 'boyfriend'],
  ['女朋友', 'girlfriend'],
  ['男友', 'boyfriend'],
  ['女友', 'girlfriend'],
  ['未婚夫', 'partner'],
  ['未婚妻', 'partner'],
  ['对象', 'partner'],
  ['老婆', 'wife'],
  ['妻子', 'wife'],
  ['太太', 'wife'],
  ['媳妇', 'wife'],
  ['爱人', 'spouse'],
  ['老公', 'husband'],
  ['丈夫', 'husband'],
  ['先生', 'husband'],
  ['妈妈', 'mother'],
  ['母亲', 'mother'],
  ['老妈', 'mother'],
  ['妈', 'mother'],
  ['爸爸', 'father'],
  ['父亲', 'father'],
  ['老爸', 'father'],
  ['爸', 'father'],
  ['儿子', 'son'],
  ['女儿', 'daughter'],
  ['孩子', 'child'],
  ['宝宝', 'child'],
  ['哥哥', 'brother'],
  ['弟弟', 'brother'],
  ['姐姐', 'sister'],
  ['妹妹', 'sister'],
  ['哥', 'brother'],
  ['弟', 'brother'],
  ['姐', 'sister'],
  ['妹', 'sister'],
  ['奶奶', 'grandmother'],
  ['外婆', 'grandmother'],
  ['姥姥', 'grandmother'],
  ['爷爷', 'grandfather'],
  ['外公', 'grandfather'],
  ['姥爷', 'grandfather'],
  ['闺蜜', 'friend'],
  ['好朋友', 'friend'],
  ['朋友', 'friend'],
  ['同事', 'colleague'],
  ['老板', 'boss'],
  ['领导', 'boss'],
  ['上司', 'boss'],
  ['室友', 'roommate'],
  ['舍友', 'roommate'],
];

/** Pets in Chinese, including common breeds. */
export const ZH_PETS: readonly (readonly [word: string, relation: string])[] = [
  ['狗狗', 'dog'],
  ['小狗', 'dog'],
  ['金毛', 'dog'],
  ['泰迪', 'dog'],
  ['柯基', 'dog'],
  ['哈士奇', 'dog'],
  ['柴犬', 'dog'],
  ['拉布拉多', 'dog'],
  ['边牧', 'dog'],
  ['狗', 'dog'],
  ['猫咪', 'cat'],
  ['小猫', 'cat'],
  ['橘猫', 'cat'],
  ['布偶', 'cat'],
  ['英短', 'cat'],
  ['美短', 'cat'],
  ['猫', 'cat'],
  ['兔子', 'rabbit'],
  ['仓鼠', 'hamster'],
  ['鹦鹉', 'parrot'],
];

/** Canonical relation → Chinese word, for the text rendering. */
export const ZH_RELATION_WORD: Readonly<Record<string, string>> = {
  wife: '妻子',
  husband: '丈夫',
  spouse: '爱人',
  partner: '伴侣',
  boyfriend: '男朋友',
  girlfriend: '女朋友',
  mother: '母亲',
  father: '父亲',
  son: '儿子',
  daughter: '女儿',
  child: '孩子',
  brother: '兄弟',
  sister: '姐妹',
  friend: '朋友',
  colleague: '同事',
  boss: '上司',
  roommate: '室友',
  grandmother: '祖母',
  grandfather: '祖父',
  dog: '狗',
  cat: '猫',
  rabbit: '兔子',
  hamster: '仓鼠',
  parrot: '鹦鹉',
};

/** Language names (English and Chinese) → BCP-47 code. */
export const LANGUAGES: Readonly<Record<string, string>> = {
  english: 'en',
  chinese: 'zh',
  mandarin: 'zh',
  cantonese: 'yue',
  spanish: 'es',
  french: 'fr',
  german: 'de',
  japanese: 'ja',
  korean: 'ko',
  italian: 'it',
  portuguese: 'pt',
  russian: 'ru',
  arabic: 'ar',
  hindi: 'hi',
  dutch: 'nl',
  swedish: 'sv',
  vietnamese: 'vi',
  thai: 'th',
  turkish: 'tr',
  polish: 'pl',
  greek: 'el',
  hebrew: 'he',
  英语: 'en',
  英文: 'en',
  中文: 'zh',
  汉语: 'zh',
  普通话: 'zh',
  国语: 'zh',
  粤语: 'yue',
  广东话: 'yue',
  日语: 'ja',
  日文: 'ja',
  韩语: 'ko',
  韩文: 'ko',
  法语: 'fr',
  德语: 'de',
  西班牙语: 'es',
  俄语: 'ru',
  意大利语: 'it',
  葡萄牙语: 'pt',
  阿拉伯语: 'ar',
};

/** Language code → names for the text rendering. */
export const LANGUAGE_NAMES: Readonly<Record<string, readonly [en: string, zh: string]>> = {
  en: ['English', '英语'],
  zh: ['Chinese', '中文'],
  yue: ['Cantonese', '粤语'],
  es: ['Spanish', '西班牙语'],
  fr: ['French', '法语'],
  de: ['German', '德语'],
  ja: ['Japanese', '日语'],
  ko: ['Korean', '韩语'],
  it: ['Italian', '意大利语'],
  pt: ['Portuguese', '葡萄牙语'],
  ru: ['Russian', '俄语'],
  ar: ['Arabic', '阿拉伯语'],
};

/** Capitalised words that follow "I'm" or "my friend" without being names. */
export const NOT_NAMES: ReadonlySet<string> = new Set(
  (
    'I The A An And But Or So Then Now Here There This That It Monday Tuesday Wednesday Thursday Friday ' +
    'Saturday Sunday January February March April May June July August September October November December ' +
    'American British English Chinese Canadian Australian Indian Japanese Korean German French Spanish Italian ' +
    'Mexican Brazilian Russian Dutch Swedish Irish Scottish Welsh Vietnamese Thai Filipino Turkish Polish Greek ' +
    'Catholic Christian Muslim Jewish Buddhist Hindu Atheist Vegan Vegetarian Sorry Fine Good Okay OK Ok Back Home ' +
    'Here Done Ready Sure Not Just Also Really Still Happy Sad Tired Busy New Old God Christmas Easter'
  ).split(/\s+/u),
);

/**
 * Chinese places an offline extractor should recognise in "我是X人" (where X could also be "好",
 * "一个人"…): provinces, regions and large cities. Other patterns ("住在X", "来自X") accept any place.
 */
export const ZH_PLACES: readonly string[] = (
  '北京 上海 天津 重庆 河北 山西 辽宁 吉林 黑龙江 江苏 浙江 安徽 福建 江西 山东 河南 湖北 湖南 广东 海南 四川 贵州 ' +
  '云南 陕西 甘肃 青海 台湾 内蒙古 广西 西藏 宁夏 新疆 香港 澳门 东北 西北 华南 华北 江南 广州 深圳 杭州 南京 苏州 ' +
  '成都 武汉 西安 长沙 郑州 济南 青岛 大连 沈阳 哈尔滨 长春 厦门 福州 合肥 南昌 昆明 贵阳 南宁 海口 三亚 兰州 ' +
  '太原 石家庄 呼和浩特 乌鲁木齐 拉萨 银川 西宁 宁波 温州 无锡 佛山 东莞 珠海 汕头 潮汕 徐州 扬州 常州 绍兴 ' +
  '台州 烟台 洛阳 开封 桂林 丽江 上饶 赣州 本地 外地'
).split(/\s+/u);

/** Chinese organisation suffixes: "在X上班" names an employer when X ends with one. */
export const ZH_ORG_SUFFIXES =
  /(?:公司|集团|银行|医院|学校|大学|学院|中学|小学|研究所|研究院|工作室|事务所|工厂|厂|报社|电视台|机构|政府|部门|科技|网络|互联网|局|所)$/u;

/** Well-known Chinese employers that carry no suffix. */
export const ZH_KNOWN_EMPLOYERS: readonly string[] = [
  '字节跳动',
  '字节',
  '腾讯',
  '阿里',
  '阿里巴巴',
  '百度',
  '华为',
  '小米',
  '美团',
  '京东',
  '网易',
  '拼多多',
  '滴滴',
  '快手',
  '蚂蚁',
  '微软',
  '谷歌',
  '苹果',
  '亚马逊',
];
